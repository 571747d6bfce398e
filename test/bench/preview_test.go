package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v2/util/db"
	"github.com/argoproj/argo-cd/v2/util/io"
	"github.com/argoproj/argo-cd/v2/util/settings"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/promotionpreview"
	"github.com/gitops-service/gitops-service/reconcilers/render"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	previewComponents = 20
	previewRuns       = 20
	targetPreviewP99  = 5 * time.Second
	// A release preview: the Snapshot into 3 Environments of one path.
	releaseEnvironments = 3
	releaseRuns         = 10
	targetReleaseP99    = 30 * time.Second
)

// timedRepo is Argo CD's repo-server client with the time spent in
// GenerateManifest added up.
type timedRepo struct {
	apiclient.Clientset
	mu    sync.Mutex
	spent time.Duration
}

type timedClient struct {
	apiclient.RepoServerServiceClient
	t *timedRepo
}

func (t *timedRepo) NewRepoServerClient() (io.Closer, apiclient.RepoServerServiceClient, error) {
	c, client, err := t.Clientset.NewRepoServerClient()
	return c, timedClient{client, t}, err
}

func (c timedClient) GenerateManifest(ctx context.Context, in *apiclient.ManifestRequest, opts ...grpc.CallOption) (*apiclient.ManifestResponse, error) {
	start := time.Now()
	defer func() {
		c.t.mu.Lock()
		c.t.spent += time.Since(start)
		c.t.mu.Unlock()
	}()
	return c.RepoServerServiceClient.GenerateManifest(ctx, in, opts...)
}

func (t *timedRepo) take() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.spent
	t.spent = 0
	return d
}

// BenchmarkPreview measures a PromotionPreview of a Snapshot of 20
// components (a Deployment each, its image changed) against a namespace where
// they run, with the real repo-server: the whole preview (render, diff,
// dry-run) and the repo-server's share of it.
func BenchmarkPreview(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runPreview(b)
	}
}

func runPreview(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := loadAvg()
	ctrl.SetLogger(logr.Discard())
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "bench-preview"})
	if err != nil {
		b.Fatal(err)
	}
	defer kube.Stop()
	argo, err := stack.StartArgoCD(ctx, kube, stack.ArgoOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer argo.Stop()
	root, _ := stack.RepoRoot()
	if err := kube.InstallCRDsWithoutAdmissionChecks(ctx, filepath.Join(root, "manifests", "crd")); err != nil {
		b.Fatal(err)
	}
	tracking := "annotation"
	if stack.ArgoCDMajor() == "2" {
		tracking = "label"
	}
	// The Environments' API server is the stack's, on loopback.
	loopback := egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix(stack.StackLoopback)}}
	mgr, err := sidecar.New(ctx, kube.Config, sidecar.Options{ArgoNamespace: argo.Namespace, MetricsAddr: "0", ProbeAddr: "0", QPS: 200, Burst: 400,
		Concurrency: 4, SyncPeriod: time.Hour, AllowFileRepositories: true,
		Egress:  loopback,
		Preview: sidecar.PreviewOptions{RepoServerAddr: argo.RepoServerAddr, RepoServerPlaintext: true, PerTenant: 2, Total: 8, DefaultTracking: tracking}})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	files := map[string]string{}
	for i := 0; i < previewComponents; i++ {
		name := fmt.Sprintf("comp-%02d", i)
		files["components/"+name+"/kustomization.yaml"] = "resources:\n- deployment.yaml\n"
		files["components/"+name+"/deployment.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: app
        image: quay.io/bench/%[1]s:0
`, name)
	}
	repo, err := stack.NewGitRepo(b.TempDir(), "preview")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := repo.Commit(files, "20 components"); err != nil {
		b.Fatal(err)
	}
	c := mgr.GetClient()
	api := mgr.GetAPIReader()
	w, err := client.New(kube.Config, client.Options{Scheme: sidecar.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	ns, target := "tenant", "target"
	for _, n := range []string{ns, target} {
		if err := w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			b.Fatal(err)
		}
	}
	kc, err := kube.KubeconfigFor(kube.AdminToken)
	if err != nil {
		b.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(w.Create(ctx, &corev1.Secret{ObjectMeta: meta("creds"), Type: v1.ManagedEnvironmentSecretType, StringData: map[string]string{"kubeconfig": string(kc)}}))
	must(w.Create(ctx, &as.Application{ObjectMeta: meta("app"), Spec: as.ApplicationSpec{DisplayName: "app"}}))
	must(w.Create(ctx, &as.Environment{ObjectMeta: meta("prod"), Spec: as.EnvironmentSpec{DisplayName: "prod",
		UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
			APIURL: kube.URL, TargetNamespace: target, ClusterCredentialsSecret: "creds"}}}}))
	snap := &as.Snapshot{ObjectMeta: meta("snap"), Spec: as.SnapshotSpec{Application: "app"}}
	for i := 0; i < previewComponents; i++ {
		name := fmt.Sprintf("comp-%02d", i)
		comp := &as.Component{ObjectMeta: meta(name), Spec: as.ComponentSpec{ComponentName: name, Application: "app", ContainerImage: "quay.io/bench/" + name + ":0"}}
		must(w.Create(ctx, comp))
		comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: repo.URL, Branch: "main", Context: "components/" + name}
		must(w.Status().Update(ctx, comp))
		snap.Spec.Components = append(snap.Spec.Components, as.SnapshotComponent{Name: name, ContainerImage: "quay.io/bench/" + name + ":1"})
		// What runs there: the component at tag 0.
		live := &appsv1.Deployment{}
		must(yaml.Unmarshal([]byte(files["components/"+name+"/deployment.yaml"]), live))
		live.Namespace = target
		must(w.Create(ctx, live))
	}
	must(w.Create(ctx, snap))

	cs, err := kubernetes.NewForConfig(kube.Config)
	must(err)
	settingsMgr := settings.NewSettingsManager(ctx, cs, argo.Namespace)
	repoClient := &timedRepo{Clientset: apiclient.NewRepoServerClientset(argo.RepoServerAddr, 60, apiclient.TLSConfiguration{DisableTLS: true})}
	engine := &promotionpreview.Engine{Renderer: &render.Renderer{Client: c, APIReader: api, ArgoNamespace: argo.Namespace, Repo: repoClient, Settings: settingsMgr,
		DB: db.NewDB(argo.Namespace, settingsMgr, cs), DefaultTracking: tracking, AllowFileRepositories: true,
		Access: &tenantproject.Access{Client: c, APIReader: api, ArgoNamespace: argo.Namespace, AllowFileRepositories: true}, Egress: &loopback}}

	// The Environment's cluster connects (its ManagedEnvironment and Argo CD
	// cluster Secret), and the first preview fills the repo-server's cache.
	deadline := time.Now().Add(3 * time.Minute)
	var cold, coldRepo time.Duration
	for {
		start := time.Now()
		res, err := engine.Run(ctx, ns, "app", "snap", "prod")
		if err == nil {
			cold, coldRepo = time.Since(start), repoClient.take()
			for _, comp := range res.Components {
				if comp.RenderError != "" {
					b.Fatalf("component %s: %s", comp.Name, comp.RenderError)
				}
			}
			break
		}
		repoClient.take()
		if kernel.AsRefusal(err) == nil && !errors.Is(err, context.Canceled) {
			b.Logf("preview: %v", err)
		}
		if time.Now().After(deadline) {
			b.Fatalf("the preview never ran: %v", err)
		}
		time.Sleep(time.Second)
	}
	var totals, repos []time.Duration
	for i := 0; i < previewRuns; i++ {
		start := time.Now()
		res, err := engine.Run(ctx, ns, "app", "snap", "prod")
		must(err)
		totals = append(totals, time.Since(start))
		repos = append(repos, repoClient.take())
		if _, _, _, clean := promotionpreview.Summarize(res.Components, promotionpreview.MaxStatusDiff); !clean {
			b.Fatalf("the preview is not clean: %+v", res.Components)
		}
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[int(float64(len(s)-1)*p)]
	}
	var sumTotal, sumRepo time.Duration
	for i := range totals {
		sumTotal += totals[i]
		sumRepo += repos[i]
	}
	share := 100 * float64(sumRepo) / float64(sumTotal)
	fmt.Printf("bench: preview of %d components (Argo CD %s, load %s): cold %s (repo-server %s); warm p50 %s p99 %s over %d runs, repo-server %.0f%% (p50 %s p99 %s)\n",
		previewComponents, stack.ArgoCDVersion, load, cold.Round(time.Millisecond), coldRepo.Round(time.Millisecond),
		pct(totals, 0.5).Round(time.Millisecond), pct(totals, 0.99).Round(time.Millisecond), previewRuns, share,
		pct(repos, 0.5).Round(time.Millisecond), pct(repos, 0.99).Round(time.Millisecond))
	b.ReportMetric(float64(pct(totals, 0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(totals, 0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(share, "repo-server-%")
	if p99 := pct(totals, 0.99); p99 > targetPreviewP99 {
		b.Logf("p99 %s is over the %s goal", p99, targetPreviewP99)
	}

	// A release preview: the path prod -> prod-2 -> prod-3, each on its own
	// target namespace where the components run at tag 0, previewed one
	// Environment after another as the reconciler does (release).
	for i := 2; i <= releaseEnvironments; i++ {
		name, parent, tns := fmt.Sprintf("prod-%d", i), "prod", fmt.Sprintf("target-%d", i)
		if i > 2 {
			parent = fmt.Sprintf("prod-%d", i-1)
		}
		must(w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tns}}))
		must(w.Create(ctx, &as.Environment{ObjectMeta: meta(name), Spec: as.EnvironmentSpec{DisplayName: name, ParentEnvironment: parent,
			UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
				APIURL: kube.URL, TargetNamespace: tns, ClusterCredentialsSecret: "creds"}}}}))
		for j := 0; j < previewComponents; j++ {
			live := &appsv1.Deployment{}
			must(yaml.Unmarshal([]byte(files[fmt.Sprintf("components/comp-%02d/deployment.yaml", j)]), live))
			live.Namespace = tns
			must(w.Create(ctx, live))
		}
	}
	var envs as.EnvironmentList
	deadline = time.Now().Add(time.Minute)
	for {
		must(api.List(ctx, &envs, client.InNamespace(ns)))
		if len(envs.Items) == releaseEnvironments || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	path := as.PromotionPreviewSpec{AllEnvironments: true}.Previewed(envs.Items)
	if len(path) != releaseEnvironments {
		b.Fatalf("the path is %v", path)
	}
	release := func() error {
		for _, env := range path {
			res, err := engine.Run(ctx, ns, "app", "snap", env)
			if err != nil {
				return fmt.Errorf("%s: %w", env, err)
			}
			if _, _, _, clean := promotionpreview.Summarize(res.Components, promotionpreview.MaxStatusDiff); !clean {
				return fmt.Errorf("%s: the preview is not clean: %+v", env, res.Components)
			}
		}
		return nil
	}
	// The new Environments' clusters connect first.
	deadline = time.Now().Add(3 * time.Minute)
	for err := release(); err != nil; err = release() {
		if time.Now().After(deadline) {
			b.Fatalf("the release preview never ran: %v", err)
		}
		time.Sleep(time.Second)
	}
	var releases []time.Duration
	for i := 0; i < releaseRuns; i++ {
		start := time.Now()
		must(release())
		releases = append(releases, time.Since(start))
	}
	// What a promotion pays before it enters an Environment that requires
	// a preview: rendering every component again (render.Renderer.Hashes),
	// cold and then from the cache (the source at the same commit).
	renderer := *engine.Renderer
	renderer.Cache = &render.Cache{}
	start := time.Now()
	_, err = renderer.Hashes(ctx, ns, "app", "snap", "prod")
	must(err)
	coldHashes := time.Since(start)
	var hashes []time.Duration
	for i := 0; i < releaseRuns; i++ {
		start := time.Now()
		_, err := renderer.Hashes(ctx, ns, "app", "snap", "prod")
		must(err)
		hashes = append(hashes, time.Since(start))
	}
	fmt.Printf("bench: release preview of %d Environments x %d components (Argo CD %s, load %s): p50 %s p99 %s over %d runs (goal p99 <= %s); "+
		"render at apply of %d components: cold %s, cached p50 %s p99 %s (cache hits %d, misses %d)\n",
		releaseEnvironments, previewComponents, stack.ArgoCDVersion, loadAvg(), pct(releases, 0.5).Round(time.Millisecond), pct(releases, 0.99).Round(time.Millisecond),
		releaseRuns, targetReleaseP99, previewComponents, coldHashes.Round(time.Millisecond), pct(hashes, 0.5).Round(time.Millisecond),
		pct(hashes, 0.99).Round(time.Millisecond), renderer.Cache.Hits, renderer.Cache.Misses)
	b.ReportMetric(float64(pct(releases, 0.99).Milliseconds()), "release-p99-ms")
	b.ReportMetric(float64(pct(hashes, 0.99).Milliseconds()), "render-at-apply-p99-ms")
	if p99 := pct(releases, 0.99); p99 > targetReleaseP99 {
		b.Logf("release preview p99 %s is over the %s goal", p99, targetReleaseP99)
	}
}
