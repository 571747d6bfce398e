// Command gitops-service is the GitOps Service sidecar: it runs beside Argo CD and
// turns the GitOps Service API's CRs into Argo CD objects.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gitops-service/gitops-service/extension/buildinfo"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
	"github.com/gitops-service/gitops-service/reconcilers/deploymenttarget"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	gsmetrics "github.com/gitops-service/gitops-service/reconcilers/metrics"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == removeSettingsCommand {
		os.Exit(removeArgoCDSettings(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == operatorSettingsCommand {
		os.Exit(argoCDOperatorSettings(os.Args[2:]))
	}
	var o sidecar.Options
	flag.StringVar(&o.ArgoNamespace, "argocd-namespace", envOr("ARGOCD_NAMESPACE", "argocd"), "Namespace of the Argo CD instance the sidecar serves (env ARGOCD_NAMESPACE).")
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	metricsSecure := flag.Bool("metrics-secure", true, "Serve /metrics over https to callers the API server authenticates and authorizes for get on the non-resource URL /metrics (ClusterRole gitops-service-metrics-reader); false serves plain http to anyone (only behind your own authenticating proxy).")
	flag.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for the https metrics endpoint; \"\" makes a self-signed certificate at start.")
	flag.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "Address of net/http/pprof (/debug/pprof/) for profiling; \"0\" disables it (the default: it shows the process's internals).")
	flag.BoolVar(&o.LeaderElect, "leader-elect", true, "Elect a leader (Lease) so only one replica reconciles.")
	flag.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; defaults to --argocd-namespace.")
	flag.Float64Var(&o.QPS, "kube-api-qps", 1000, "Client-side rate limit (requests/s) to the Kubernetes API; sized for thousands of objects.")
	flag.IntVar(&o.Burst, "kube-api-burst", 2000, "Client-side burst to the Kubernetes API.")
	// Each new CR costs a few API round trips one after another, so throughput is
	// workers / latency: 16 workers left the sidecar ~75 s behind a burst of 10,000
	// (make bench, issue 13), 128 ~7 s, 256 ~1 s. Claims of one namespace race for
	// its targets instead: past 128 workers they only add conflicts (make bench
	// BENCH=Claims: 0.02 -> 0.8 409s per claim, 15.4 -> 20.8 s for 1,000).
	flag.IntVar(&o.Concurrency, "concurrent-reconciles", 256, "Parallel reconciles per controller.")
	flag.IntVar(&o.BinderConcurrency, "binder-concurrent-reconciles", 128, "Parallel reconciles of the DeploymentTargetClaim binder.")
	flag.DurationVar(&o.PromotionTimeout, "promotion-timeout", promotionrun.DefaultTimeout, "How long a PromotionRun may take per Environment before it fails.")
	flag.StringVar(&o.SigstoreTrustedRoot, "sigstore-trusted-root", "", "File with the platform's sigstore trusted root (trusted_root.json, e.g. mounted from a ConfigMap) that keyless signatures of an Environment's signature gate must chain to; verified offline. Empty: only public keys verify.")
	flag.DurationVar(&o.ReleaseTimeout, "release-timeout", deploymenttarget.DefaultReleaseTimeout, "How long freeing a deleted DeploymentTarget's resources may fail before the target is marked Failed.")
	flag.DurationVar(&o.SyncPeriod, "sync-period", 10*time.Hour, "How often every object is reconciled again even without changes.")
	flag.StringVar(&o.GeneratorAddr, "generator-bind-address", ":8090", "Address of the ApplicationSet plugin generator; \"0\" disables it.")
	flag.StringVar(&o.GeneratorTokenFile, "generator-token-file", "/etc/gitops-service/generator/token", "File with the bearer token Argo CD's applicationset-controller presents (mount the Secret named in the plugin ConfigMap).")
	flag.StringVar(&o.UIProxyAddr, "ui-proxy-bind-address", ":8091", "Address of the Argo CD proxy extension backend (the UI panel's API); \"0\" disables it.")
	flag.StringVar(&o.UIProxyTokenFile, "ui-proxy-token-file", "/etc/gitops-service/ui-proxy/token", "File with the secret header value argocd-server adds to proxied requests (a mounted Secret).")
	flag.StringVar(&o.SubscriptionWebhookAddr, "subscription-webhook-bind-address", "0", "Address of the SnapshotSubscription webhook (POST /subscriptions/<namespace>/<name>, authenticated per subscription; docs/subscriptions.md), to expose to registries and git servers; \"0\" (the default) disables it: subscriptions are then only polled.")
	flag.StringVar(&o.ArgoRedis.Addr, "argocd-redis", envOr("ARGOCD_REDIS", "argocd-redis:6379"), "host:port of Argo CD's Redis, read for per-resource health (Argo CD 3.x keeps it there by default); \"\" disables (env ARGOCD_REDIS).")
	flag.StringVar(&o.ArgoRedis.Compression, "argocd-redis-compression", envOr("REDIS_COMPRESSION", "gzip"), "Compression Argo CD uses in Redis: gzip or none (env REDIS_COMPRESSION, as Argo CD's).")
	// The password only from the environment (Secret argocd-redis, key auth), never a flag.
	o.ArgoRedis.Password = os.Getenv("REDIS_PASSWORD")
	// The Pod (downward API), for Events about the sidecar itself.
	if name := os.Getenv("POD_NAME"); name != "" {
		o.Pod = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: name,
			Namespace: os.Getenv("POD_NAMESPACE"), UID: types.UID(os.Getenv("POD_UID"))}
	}
	flag.StringVar(&o.SidecarNamespace, "sidecar-namespace", envOr("POD_NAMESPACE", inClusterNamespace()), "The sidecar's own namespace, never a tenant (env POD_NAMESPACE; in a cluster its service account's namespace).")
	flag.StringVar(&o.ServiceAccount, "service-account", "", "The sidecar's ServiceAccount as namespace/name: the shipped admission policies must name it as their parameter for approvals and requesters to count; \"\" (the default): the one the sidecar authenticates as.")
	neverTenants := flag.String("never-tenant-namespaces", strings.Join(nontenant.DefaultNeverTenants, ","), "Comma-separated namespaces that are never tenants: their CRs are refused with a condition, like those of the Argo CD namespace and the sidecar's own.")
	flag.StringVar(&o.ArgoCDInstance, "argocd-instance", "", "Name of this Argo CD instance when tenants are spread over several: the sidecar serves only the namespaces labelled "+sharding.LabelArgoCDInstance+"=<name> (and unlabelled ones with --serve-unlabelled-namespaces); \"\" (the default): one instance serves every namespace.")
	flag.BoolVar(&o.ServeUnlabelledNamespaces, "serve-unlabelled-namespaces", true, "With --argocd-instance: this instance also serves namespaces without the "+sharding.LabelArgoCDInstance+" label (the default instance; give it to one instance only).")
	flag.BoolVar(&o.AllowFileRepositories, "allow-file-repositories", false, "Let tenants use file:// repository URLs, which the repo-server reads from its own disk: only for demos and tests on one machine, never for a shared cluster.")
	memoryLimit := flag.String("memory-limit", "", "The container's memory limit (e.g. 768Mi) for the Go runtime's soft limit; default: env "+sidecar.EnvMemoryLimit+" (bytes, from limits.memory), else the cgroup's. GOMEMLIMIT, when set, wins.")
	memoryPercent := flag.Int("memory-limit-percent", 90, "The Go runtime's soft memory limit as a percent of the container's memory limit; 0 sets none.")
	gcPercent := flag.Int("gc-percent", sidecar.DefaultGCPercent, "The Go runtime's garbage collection target (as GOGC: the heap grows by this percent of the live heap between collections); 0 leaves Go's default (100). GOGC, when set, wins.")
	flag.StringVar(&o.Preview.RepoServerAddr, "preview-repo-server", "argocd-repo-server:8081", "host:port of Argo CD's repo-server, which PromotionPreviews render with (Argo CD's gRPC client); \"\" disables previews.")
	flag.BoolVar(&o.Preview.RepoServerPlaintext, "preview-repo-server-plaintext", false, "Talk to the repo-server without TLS (as Argo CD's --repo-server-plaintext).")
	flag.BoolVar(&o.Preview.RepoServerStrictTLS, "preview-repo-server-strict-tls", false, "Verify the repo-server's TLS certificate (as Argo CD's --repo-server-strict-tls).")
	flag.DurationVar(&o.Preview.RepoServerTimeout, "preview-repo-server-timeout", 60*time.Second, "How long one manifest request to the repo-server may take (as Argo CD's --repo-server-timeout-seconds).")
	flag.IntVar(&o.Preview.PerTenant, "preview-max-per-tenant", 2, "PromotionPreviews running at once per tenant namespace; more wait. Free places go first to the waiting namespace with the fewest running.")
	flag.IntVar(&o.Preview.Total, "preview-max-total", 8, "PromotionPreviews running at once in all; more wait.")
	localIdentity := flag.String("preview-local-identity", "system:serviceaccount:"+argoNamespacePlaceholder+":argocd-application-controller",
		"The identity Argo CD's application controller applies with on its own cluster, which previews of Environments deploying there impersonate (the sidecar may impersonate only that ServiceAccount: manifests/rbac); the default's namespace is --argocd-namespace. \"\" refuses those previews.")
	flag.StringVar(&o.Preview.DefaultTracking, "preview-default-tracking", "annotation", "Argo CD's resource tracking method when argocd-cm sets no application.resourceTrackingMethod: \"annotation\" for Argo CD 3, \"label\" for Argo CD 2.")
	probeAllowHosts := flag.String("probe-allow-hosts", "", "Comma-separated host names (or addresses) the sidecar may connect to for tenants (repository probes, ManagedEnvironment API servers) even when they resolve to a loopback, link-local, unspecified or cluster-internal address; e.g. an in-cluster git server's Service name.")
	probeAllowCIDRs := flag.String("probe-allow-cidrs", "", "Comma-separated CIDRs (or addresses) the sidecar may connect to for tenants even though they are loopback, link-local, unspecified or in --probe-cluster-cidrs.")
	probeClusterCIDRs := flag.String("probe-cluster-cidrs", strings.Join(egress.DefaultClusterRanges, ","), "Comma-separated service and pod CIDRs of the cluster, which repository probes of tenant URLs do not reach (ManagedEnvironment API servers may be there); set them to your cluster's.")
	settingsMode := flag.String("argocd-settings", string(argocdsettings.Ensure), "Our keys in Argo CD's ConfigMaps (extension.config.gitops-service and the health checks in --argocd-cm, server.enable.proxy.extension and the applicationset controller's tuning in --argocd-cmd-params-cm, policy.gitops-service-admin.csv in --argocd-rbac-cm; docs/install.md): \"ensure\" writes them by server-side apply as field manager "+argocdsettings.FieldManager+" and puts back any that go missing within --argocd-settings-interval; \"verify\" writes nothing and reports missing or different keys (log, Warning Event, metric gitops_service_argocd_settings_missing): for Argo CD installed by Helm or its operator, which set them from their values; \"off\".")
	flag.DurationVar(&o.ArgoSettings.Interval, "argocd-settings-interval", argocdsettings.DefaultInterval, "How often --argocd-settings reads Argo CD's ConfigMaps: a key an Argo CD upgrade removed is back within it.")
	names := argocdsettings.DefaultNames()
	bindNameFlags(flag.CommandLine, &names)
	flag.StringVar(&names.UIProxyURL, "ui-proxy-url", names.UIProxyURL, "The URL argocd-server reaches the ui-proxy (the Service of manifests/install/ui-proxy.yaml) at, written into extension.config.gitops-service.")
	flag.StringVar(&names.UIProxySecret, "ui-proxy-secret", names.UIProxySecret, "The Secret (key token, labelled app.kubernetes.io/part-of=argocd) argocd-server reads the header value it adds to proxied requests from, named in extension.config.gitops-service.")
	flag.StringVar(&o.PolicyWebhook.Addr, "policy-webhook-bind-address", "0", "Address of the validating webhook that refuses a PromotionPolicy whose rules do not compile (its certificate is the sidecar's own, kept in --policy-webhook-secret; manifests/install serves it on :9443); \"0\" (the default) disables it.")
	policyWebhookHosts := flag.String("policy-webhook-hosts", "gitops-service-webhook."+argoNamespacePlaceholder+".svc", "Comma-separated DNS names (or IPs) of the webhook's certificate: its Service's; "+argoNamespacePlaceholder+" is --argocd-namespace.")
	flag.StringVar(&o.PolicyWebhook.Secret, "policy-webhook-secret", "gitops-service-webhook-tls", "Secret of --argocd-namespace that keeps the webhook's certificate and CA (made and renewed by the sidecar).")
	flag.StringVar(&o.PolicyWebhook.Configuration, "policy-webhook-configuration", "gitops-service-promotionpolicies."+argoNamespacePlaceholder, "ValidatingWebhookConfiguration whose caBundle the sidecar writes (manifests/install/promotion-policies-webhook.yaml, named per instance); "+argoNamespacePlaceholder+" is --argocd-namespace.")
	version := flag.Bool("version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	o.Preview.LocalIdentity = strings.ReplaceAll(*localIdentity, argoNamespacePlaceholder, o.ArgoNamespace)
	o.PolicyWebhook.Configuration = strings.ReplaceAll(o.PolicyWebhook.Configuration, argoNamespacePlaceholder, o.ArgoNamespace)
	o.PolicyWebhook.Hosts = strings.Split(strings.ReplaceAll(*policyWebhookHosts, argoNamespacePlaceholder, o.ArgoNamespace), ",")
	if *version {
		fmt.Println(buildinfo.String("gitops-service"))
		return
	}
	mode, err := argocdsettings.ParseMode(*settingsMode)
	if err == nil {
		err = names.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o.ArgoSettings.Mode, o.ArgoSettings.Names = mode, names
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	sidecar.SetMemoryLimit(ctrl.Log.WithName("memory"), *memoryLimit, *memoryPercent)
	sidecar.SetGCPercent(ctrl.Log.WithName("memory"), *gcPercent)
	o.MetricsInsecure = !*metricsSecure
	if err := parseEgress(&o.Egress, *probeAllowHosts, *probeAllowCIDRs, *probeClusterCIDRs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o.NeverTenants = []string{}
	for _, ns := range strings.Split(*neverTenants, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.NeverTenants = append(o.NeverTenants, ns)
		}
	}

	registerBuildInfo(metrics.Registry)
	ctrl.Log.Info("gitops-service", "version", buildinfo.Version, "revision", buildinfo.Revision)
	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		ctrl.Log.Error(err, "gitops-service stopped")
		os.Exit(1)
	}
}

// registerBuildInfo adds gitops_service_build_info{version,goversion,revision} = 1
// to reg, so dashboards can tell which build each replica runs.
func registerBuildInfo(reg prometheus.Registerer) {
	reg.MustRegister(gsmetrics.NewBuildInfo(buildinfo.Version, buildinfo.GoVersion(), buildinfo.Revision))
}

// parseEgress reads the --probe-* flags.
func parseEgress(p *egress.Policy, hosts, allowCIDRs, clusterCIDRs string) error {
	var err error
	if p.AllowRanges, err = egress.ParsePrefixes(strings.Split(allowCIDRs, ",")); err != nil {
		return fmt.Errorf("--probe-allow-cidrs: %w", err)
	}
	if p.ClusterRanges, err = egress.ParsePrefixes(strings.Split(clusterCIDRs, ",")); err != nil {
		return fmt.Errorf("--probe-cluster-cidrs: %w", err)
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			p.AllowHosts = append(p.AllowHosts, h)
		}
	}
	return nil
}

// argoNamespacePlaceholder in a flag's value stands for --argocd-namespace.
const argoNamespacePlaceholder = "<argocd-namespace>"

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// inClusterNamespace is the namespace of the pod's service account, or "".
func inClusterNamespace() string {
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(ns))
}

func run(ctx context.Context, o sidecar.Options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes configuration (in-cluster, or set KUBECONFIG): %w", err)
	}
	return sidecar.Run(ctx, cfg, o)
}
