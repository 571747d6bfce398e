// Package sidecar wires the sidecar's reconcilers and servers into one
// controller-runtime manager; main parses flags, tests call New directly.
package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/metrics"
	"github.com/gitops-service/gitops-service/reconcilers/nontenant"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/promotionpolicy"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=argocd
// The metrics endpoint asks the API server who a caller is and whether it may
// get /metrics (controller-runtime's metrics filter).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure the sidecar.
type Options struct {
	// ArgoNamespace is the namespace of the Argo CD instance we serve.
	ArgoNamespace string
	// MetricsAddr and ProbeAddr are listen addresses; "0" disables.
	MetricsAddr string
	ProbeAddr   string
	// MetricsInsecure serves /metrics over plain http to anyone who reaches
	// it; by default it is https, and only callers the API server
	// authenticates and authorizes for the non-resource URL /metrics (get)
	// are answered: the metrics name every tenant's namespaces and figures.
	MetricsInsecure bool
	// MetricsCertDir holds the metrics server's tls.crt and tls.key; empty:
	// a self-signed certificate made at start.
	MetricsCertDir string
	// PolicyWebhook is the PromotionPolicy admission webhook.
	PolicyWebhook PolicyWebhookOptions
	// PprofAddr serves net/http/pprof (CPU and heap profiles); "" or "0" disables.
	PprofAddr string
	// LeaderElect runs a Lease so only one replica reconciles.
	LeaderElect             bool
	LeaderElectionNamespace string
	// QPS and Burst are the client's rate limits.
	QPS   float64
	Burst int
	// Concurrency is the number of parallel reconciles per controller.
	Concurrency int
	// BinderConcurrency is the DeploymentTargetClaim binder's; 0 is Concurrency.
	BinderConcurrency int
	// SyncPeriod is how often every object is reconciled without changes.
	SyncPeriod time.Duration
	// GeneratorAddr is where the ApplicationSet plugin generator listens; "0" disables it.
	GeneratorAddr string
	// GeneratorTokenFile holds the bearer token Argo CD presents (a mounted Secret).
	GeneratorTokenFile string
	// UIProxyAddr is where the backend of the Argo CD proxy extension (the UI
	// panel's API) listens; "0" disables it.
	UIProxyAddr string
	// UIProxyTokenFile holds the secret header value argocd-server adds.
	UIProxyTokenFile string
	// SubscriptionWebhookAddr is where the SnapshotSubscription webhook
	// listens; "" or "0" disables it.
	SubscriptionWebhookAddr string
	// PromotionTimeout is how long a PromotionRun may take per Environment.
	PromotionTimeout time.Duration
	// SigstoreTrustedRoot is the platform's trusted root (sigstore's
	// trusted_root.json) for keyless signatures of the signature gate;
	// empty: only keys verify.
	SigstoreTrustedRoot string
	// ArgoRedis is the Redis of Argo CD's application controller, read for the
	// per-resource health that Argo CD 3.x keeps only there by default. Empty
	// Addr: GitOpsDeployments show no per-resource health on such an Argo CD.
	ArgoRedis argocd.RedisOptions
	// SidecarNamespace is the sidecar's own namespace (never a tenant); may be empty.
	SidecarNamespace string
	// NeverTenants are further namespaces whose CRs are refused; nil means
	// nontenant.DefaultNeverTenants.
	NeverTenants []string
	// AllowFileRepositories lets tenants use file:// repository URLs (the
	// repo-server's own disk): only for demos and tests on one machine.
	AllowFileRepositories bool
	// ProjectGrace is how long a new tenant AppProject is kept before it may be
	// deleted as unused; tenantproject.DefaultGrace when 0.
	ProjectGrace time.Duration
	// ReleaseTimeout is how long freeing a deleted DeploymentTarget's
	// resources may fail before the target is marked Failed.
	ReleaseTimeout time.Duration
	// ArgoCDInstance names this Argo CD instance when tenants are spread over
	// several: only namespaces labelled sharding.LabelArgoCDInstance with it
	// (and unlabelled ones with ServeUnlabelledNamespaces) are served. Empty:
	// one instance, every namespace.
	ArgoCDInstance string
	// ServeUnlabelledNamespaces makes this instance the default one.
	ServeUnlabelledNamespaces bool
	// Pod is the sidecar's own Pod (downward API env POD_NAME, POD_NAMESPACE,
	// POD_UID), where Events about the sidecar itself go (a missing token
	// Secret); nil: none, only the log.
	Pod *corev1.ObjectReference
	// Egress is the rule for the addresses the sidecar dials for tenants
	// (repository probes, ManagedEnvironment API servers); the zero Policy
	// refuses loopback, link-local and unspecified addresses.
	Egress egress.Policy
	// Preview configures PromotionPreviews; an empty RepoServerAddr disables them.
	Preview PreviewOptions
	// ServiceAccount is the sidecar's ServiceAccount, "namespace/name": the
	// admission policies must name it as their parameter for approvals and
	// requesters to count. Empty: the one it authenticates as (a
	// SelfSubjectReview at start-up).
	ServiceAccount string
	// ArgoSettings are our keys in Argo CD's ConfigMaps: written and kept
	// (ensure), only checked (verify) or neither (off, the zero value).
	ArgoSettings ArgoSettingsOptions
}

// ArgoSettingsOptions configure reconcilers/argocdsettings.
type ArgoSettingsOptions struct {
	Mode     argocdsettings.Mode
	Names    argocdsettings.Names
	Interval time.Duration
}

// PreviewOptions configure PromotionPreviews.
type PreviewOptions struct {
	// RepoServerAddr is Argo CD's repo-server (host:port).
	RepoServerAddr string
	// RepoServerPlaintext talks to it without TLS; RepoServerStrictTLS
	// verifies its certificate (else TLS without verification, as Argo CD's
	// own components default to).
	RepoServerPlaintext bool
	RepoServerStrictTLS bool
	// RepoServerTimeout bounds one manifest request (Argo CD's default: 60 s).
	RepoServerTimeout time.Duration
	// PerTenant and Total bound the previews running at once.
	PerTenant int
	Total     int
	// DefaultTracking is Argo CD's resource tracking method when argocd-cm
	// sets none: "annotation" from Argo CD 3, "label" before.
	DefaultTracking string
	// LocalIdentity is the identity Argo CD's application controller applies
	// with on its own cluster (a ServiceAccount's user name), which previews of
	// Environments there impersonate; empty: those previews are refused.
	LocalIdentity string
}

// metricsOptions serve /metrics over https to callers the API server
// authenticates (TokenReview) and authorizes (SubjectAccessReview) for
// get /metrics, unless MetricsInsecure.
func metricsOptions(o Options) metricsserver.Options {
	if o.MetricsInsecure {
		return metricsserver.Options{BindAddress: o.MetricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    o.MetricsAddr,
		SecureServing:  true,
		CertDir:        o.MetricsCertDir,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
}

// NewScheme has every type the sidecar reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(managedgitopsv1alpha1.AddToScheme(s))
	utilruntime.Must(appstudiov1alpha1.AddToScheme(s))
	utilruntime.Must(argov1alpha1.AddToScheme(s))
	return s
}

// New creates the manager with every reconciler of the sidecar registered.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	cfg.UserAgent = "gitops-service"
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.ArgoNamespace
	}
	if o.NeverTenants == nil {
		o.NeverTenants = nontenant.DefaultNeverTenants
	}
	refused := nontenant.New(o.ArgoNamespace, o.SidecarNamespace, o.NeverTenants)
	scheme := NewScheme()
	late := &lateInformers{scheme: scheme}
	// The webhook's certificates are read and written uncached (Secrets of
	// the Argo CD namespace and webhook configurations are not cached).
	var certs *promotionpolicy.Certs
	if o.PolicyWebhook.enabled() {
		direct, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, err
		}
		certs = policyCerts(o, direct)
	}
	webhookServer, err := policyWebhookServer(o, certs)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 webhookServer,
		Scheme:                        scheme,
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.ProbeAddr,
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              "gitops-service.managed-gitops.redhat.com",
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(30 * time.Second),
		// Run makes a new manager in the same process after a failure.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cacheOptions(o, refused),
		NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			late.Cache = c
			return late, err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	// With several Argo CD instances, every controller's queue holds only the
	// requests of our tenants (sharding.Sharded), and the shard reconciler hands
	// namespaces over between instances.
	var shard *sharding.Shard
	if o.ArgoCDInstance != "" {
		shard = &sharding.Shard{Instance: o.ArgoCDInstance, ServeUnlabelled: o.ServeUnlabelledNamespaces, Reader: mgr.GetClient(), Scheme: mgr.GetScheme()}
		ctx = sharding.WithShard(ctx, shard)
	}
	// One Access for every writer of a tenant's project and for previews:
	// they share its answers about which repositories are public.
	access := &tenantproject.Access{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, AllowFileRepositories: o.AllowFileRepositories, Egress: &o.Egress}
	s := shared{shard: shard, refused: refused, access: access,
		projects: &tenantproject.Projects{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ArgoNamespace: o.ArgoNamespace, Grace: o.ProjectGrace, Access: access}}
	if o.ArgoRedis.Addr != "" {
		rt, err := argocd.NewRedisTrees(o.ArgoRedis)
		if err != nil {
			return nil, fmt.Errorf("connecting to Argo CD's Redis: %w", err)
		}
		s.trees = rt
	}
	regs, err := registrations(ctx, mgr, cfg, o, s)
	if err != nil {
		return nil, err
	}
	if err := register(ctx, mgr, regs); err != nil {
		return nil, err
	}
	if err := setupArgoSettings(mgr, cfg, o); err != nil {
		return nil, err
	}
	if err := setupPolicyWebhook(mgr, certs); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	var servers []*httpRunnable
	if o.GeneratorAddr != "" && o.GeneratorAddr != "0" {
		servers = append(servers, generatorServer(o, mgr.GetClient(), mgr.GetAPIReader(), shard))
	}
	if o.UIProxyAddr != "" && o.UIProxyAddr != "0" {
		servers = append(servers, uiProxyServer(o, mgr.GetClient(), shard))
	}
	if o.SubscriptionWebhookAddr != "" && o.SubscriptionWebhookAddr != "0" {
		servers = append(servers, subscriptionWebhookServer(o, mgr, shard))
	}
	for _, srv := range servers {
		srv.event = podEvents(mgr.GetEventRecorderFor("gitops-service"), o.Pod)
		if err := mgr.Add(srv); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck(srv.name, srv.check); err != nil {
			return nil, err
		}
	}
	if err := startInformers(ctx, mgr.GetCache(), regs); err != nil {
		return nil, err
	}
	// Our metrics read the cache at scrape time and watch runs finish.
	if err := metrics.Attach(ctx, mgr); err != nil {
		return nil, err
	}
	// Ready means the caches are synced, so a probe (or a test) that sees ready
	// knows new objects are acted on at once.
	if err := mgr.AddReadyzCheck("caches-synced", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("caches not synced yet")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// cacheOptions are the manager's cache: only what the reconcilers need.
func cacheOptions(o Options, refused nontenant.Namespaces) cache.Options {
	// Only our own Argo CD objects are cached: a busy Argo CD has many more.
	ours := labels.SelectorFromSet(labels.Set{ownership.LabelManagedBy: ownership.ManagedByValue})
	argoOnly := cache.ByObject{Namespaces: map[string]cache.Config{o.ArgoNamespace: {}}, Label: ours}
	// Argo CD's sync history is never read here: cached Applications go without it.
	apps := argoOnly
	apps.Transform = stripApplication
	byObject := map[client.Object]cache.ByObject{
		&argov1alpha1.Application{}:    apps,
		&argov1alpha1.AppProject{}:     argoOnly,
		&argov1alpha1.ApplicationSet{}: argoOnly,
		// Only our Secrets of the Argo CD namespace are cached here; the
		// tenants' Secrets of our two types are watched without their
		// data (reconcilers/tenantsecret) and read one at a time.
		&corev1.Secret{}: argoOnly,
	}
	// The reconcilers never see a CR in a namespace that is never a tenant, so
	// nothing can be written for one; reconcilers/nontenant refuses them.
	for _, kind := range nontenant.Kinds() {
		byObject[kind] = cache.ByObject{Field: refused.Exclude()}
	}
	return cache.Options{
		SyncPeriod: &o.SyncPeriod,
		// managedFields are never read here and are a large part of each object.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         byObject,
	}
}

// stripApplication is the cache's transform of Applications: managedFields
// (as for every kind) and Argo CD's sync history (status.history, up to 10
// past syncs with their sources), which nothing here reads. Our writes to
// Applications are server-side applies without status and patches of what
// changed, so the stripped fields are never written back.
func stripApplication(in any) (any, error) {
	out, err := cache.TransformStripManagedFields()(in)
	if app, ok := out.(*argov1alpha1.Application); ok {
		app.Status.History = nil
	}
	return out, err
}

// serviceAccount is the sidecar's ServiceAccount: named ("namespace/name"),
// or the one the API server says it is; none when it runs as something else
// (then no approval counts: the policies cannot name it).
func serviceAccount(ctx context.Context, cfg *rest.Config, named string) (install.ServiceAccount, error) {
	if named != "" {
		ns, name, ok := strings.Cut(named, "/")
		if !ok || ns == "" || name == "" {
			return install.ServiceAccount{}, fmt.Errorf("service account %q: want namespace/name", named)
		}
		return install.ServiceAccount{Namespace: ns, Name: name}, nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return install.ServiceAccount{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return install.ServiceAccount{}, fmt.Errorf("asking the API server who the sidecar is: %w", err)
	}
	parts := strings.Split(r.Status.UserInfo.Username, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		ctrl.LoggerFrom(ctx).Info("the sidecar does not run as a ServiceAccount: no approval counts", "user", r.Status.UserInfo.Username)
		return install.ServiceAccount{}, nil
	}
	return install.ServiceAccount{Namespace: parts[2], Name: parts[3]}, nil
}
