package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	peerN      = flag.Int("peer-n", 100, "deployments per side in the peer comparison")
	peerM      = flag.Int("peer-m", 10, "namespaces per side in the peer comparison")
	peerRounds = flag.Int("peer-rounds", 2, "rounds of the peer comparison; even rounds run the direct side first")
)

const (
	targetPeerOverhead = 0.05
	peerProject        = "bench-peer"
)

// BenchmarkPeer compares, with the real Argo CD, N GitOpsDeployments through
// the sidecar until each is Synced/Healthy with N Argo CD Applications of the
// same spec created directly in the Argo CD namespace (what a platform without
// the GitOps Service would do), end to end. Each side deploys its own copy of
// the repository (a ConfigMap per deployment), so neither finds the
// repo-server's cache warmed by the other.
func BenchmarkPeer(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runPeer(b)
	}
}

// peerSide is one side's run: first create to last Synced/Healthy, and each
// deployment's create -> Synced/Healthy.
type peerSide struct {
	total time.Duration
	lat   []time.Duration
	load  string
	// created is each object's UID and create time.
	created map[types.UID]time.Time
	// toApp is, for GitOpsDeployments, created -> their Application created.
	toApp []time.Duration
}

func runPeer(b *testing.B) {
	ctx := context.Background()
	n, m := *peerN, *peerM
	load := loadAvg()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "bench-peer", ControllerManager: true})
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
	if err := kube.InstallCRDs(ctx, root+"/manifests/crd"); err != nil {
		b.Fatal(err)
	}
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoRedisAddr: argo.RedisAddr, Args: strings.Fields(*sidecarArgs)})
	if err != nil {
		b.Fatal(err)
	}
	defer side.Close()
	fail := func(format string, args ...any) {
		side.WriteLogs(os.Stderr)
		argo.WriteLogs(os.Stderr)
		b.Fatalf(format, args...)
	}
	cfg := rest.CopyConfig(kube.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: sidecar.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	gitRoot, err := os.MkdirTemp("", "gitops-bench-peer-git-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(gitRoot)
	// The direct side's project: its namespaces, the local cluster, any repository.
	if err := c.Create(ctx, &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: peerProject},
		Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"},
			Destinations: []argov1alpha1.ApplicationDestination{{Server: argocd.LocalServer, Namespace: "direct-*"}}}}); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("apps/%d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  value: %q\n", i, fmt.Sprint(i))
	}
	repo := func(name string) string {
		r, err := stack.NewGitRepo(gitRoot, name)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Commit(files, "bench"); err != nil {
			b.Fatal(err)
		}
		return r.URL
	}
	ours := func(round int) peerSide {
		prefix := fmt.Sprintf("ours-r%d", round)
		return measurePeerSide(b, ctx, c, fail, prefix, n, m, &v1.GitOpsDeploymentList{}, func(i int, ns, url string) (client.Object, string) {
			return &v1.GitOpsDeployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%d", i)},
				Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: url, Path: fmt.Sprintf("apps/%d", i)},
					Type: v1.GitOpsDeploymentSpecTypeAutomated},
			}, ns + "/" + fmt.Sprintf("app-%d", i)
		}, func(o any) (string, bool) {
			gd, ok := o.(*v1.GitOpsDeployment)
			if !ok {
				return "", false
			}
			return gd.Namespace + "/" + gd.Name, gd.Status.Sync.Status == v1.SyncStatusCodeSynced && gd.Status.Health.Status == v1.HealthStatusHealthy
		}, repo(prefix))
	}
	direct := func(round int) peerSide {
		prefix := fmt.Sprintf("direct-r%d", round)
		return measurePeerSide(b, ctx, c, fail, prefix, n, m, &argov1alpha1.ApplicationList{}, func(i int, ns, url string) (client.Object, string) {
			// The very spec the sidecar writes for such a GitOpsDeployment.
			gd := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: url, Path: fmt.Sprintf("apps/%d", i)},
				Type: v1.GitOpsDeploymentSpecTypeAutomated}}
			name := fmt.Sprintf("%s-app-%d", prefix, i)
			return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: name},
				Spec: argocd.ApplicationSpec(gd, argocd.Target{Server: argocd.LocalServer, Namespace: ns, Project: peerProject})}, argoNS + "/" + name
		}, func(o any) (string, bool) {
			app, ok := o.(*argov1alpha1.Application)
			if !ok || !strings.HasPrefix(app.Name, prefix+"-") {
				return "", false
			}
			return app.Namespace + "/" + app.Name, app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Health.Status == "Healthy"
		}, repo(prefix))
	}
	// When each Application appeared: the sidecar's part of our side.
	var none argov1alpha1.ApplicationList
	if err := c.List(ctx, &none, client.InNamespace(argoNS)); err != nil {
		b.Fatal(err)
	}
	aw, err := toolswatch.NewRetryWatcher(none.ResourceVersion, &cache.ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &argov1alpha1.ApplicationList{}, client.InNamespace(argoNS), &client.ListOptions{Raw: &o})
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer aw.Stop()
	var appMu sync.Mutex
	appSeen := map[string]time.Time{}
	go func() {
		for ev := range aw.ResultChan() {
			if app, ok := ev.Object.(*argov1alpha1.Application); ok && ev.Type == watch.Added {
				appMu.Lock()
				if _, seen := appSeen[app.Name]; !seen {
					appSeen[app.Name] = time.Now()
				}
				appMu.Unlock()
			}
		}
	}()
	withToApp := func(s peerSide) peerSide {
		appMu.Lock()
		defer appMu.Unlock()
		for uid, t0 := range s.created {
			if at, ok := appSeen[argocd.ApplicationName(string(uid))]; ok {
				s.toApp = append(s.toApp, at.Sub(t0))
			}
		}
		sort.Slice(s.toApp, func(i, j int) bool { return s.toApp[i] < s.toApp[j] })
		return s
	}
	var oursAll, directAll []peerSide
	for round := 1; round <= *peerRounds; round++ {
		if round%2 == 1 {
			oursAll = append(oursAll, withToApp(ours(round)))
			directAll = append(directAll, direct(round))
		} else {
			directAll = append(directAll, direct(round))
			oursAll = append(oursAll, withToApp(ours(round)))
		}
	}

	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Peer: %d GitOpsDeployments through the sidecar vs %d Argo CD Applications created directly, to Synced/Healthy\n\n", n, n)
	fmt.Fprintf(&sb, "%s Real Argo CD %s controllers; each side's %d deployments over %d namespaces, one ConfigMap each, its own copy of the repository; odd rounds run the GitOpsDeployments first.\n\n", machineLine(load), stack.ArgoCDVersion, n, m)
	sb.WriteString("| round | GitOpsDeployments: all Synced/Healthy (p50 / p99 each) | of which GitOpsDeployment -> Application, p50 / max | Applications directly: all Synced/Healthy (p50 / p99 each) | our layer adds | load after |\n|---|---|---|---|---|---|\n")
	var sumOurs, sumDirect time.Duration
	for i := range oursAll {
		o, d := oursAll[i], directAll[i]
		sumOurs += o.total
		sumDirect += d.total
		toApp := "?"
		if len(o.toApp) > 0 {
			toApp = ms(pct(o.toApp, 50)) + " / " + ms(o.toApp[len(o.toApp)-1])
		}
		fmt.Fprintf(&sb, "| %d | %s (%s / %s) | %s | %s (%s / %s) | %+.1f%% | %s |\n", i+1,
			ms(o.total), ms(pct(o.lat, 50)), ms(pct(o.lat, 99)), toApp, ms(d.total), ms(pct(d.lat, 50)), ms(pct(d.lat, 99)),
			100*(o.total.Seconds()/d.total.Seconds()-1), o.load)
	}
	overhead := sumOurs.Seconds()/sumDirect.Seconds() - 1
	fmt.Fprintf(&sb, "| all | %s | | %s | %+.1f%% (ratio %.3f; target <= +5%%: %s) | |\n", ms(sumOurs), ms(sumDirect), 100*overhead, 1+overhead, mark(overhead <= targetPeerOverhead))
	fmt.Println()
	fmt.Print(sb.String())
	b.ReportMetric(1+overhead, "ours/direct")
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		path := resultsPath(fmt.Sprintf("peer-N%d", n))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + path)
	}
}

// measurePeerSide creates n objects (mk gives each and its key) in m fresh
// namespaces named prefix-NNN from 8 clients, and waits until done says each
// is Synced/Healthy, watching list's kind.
func measurePeerSide(b *testing.B, ctx context.Context, c client.WithWatch, fail func(string, ...any), prefix string, n, m int,
	list client.ObjectList, mk func(i int, ns, url string) (client.Object, string), done func(any) (string, bool), url string) peerSide {
	for j := 0; j < m; j++ {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", prefix, j)}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.List(ctx, list); err != nil {
		b.Fatal(err)
	}
	rv := list.GetResourceVersion()
	w, err := toolswatch.NewRetryWatcher(rv, &cache.ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, list, &client.ListOptions{Raw: &o})
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	doneAt := map[string]time.Time{}
	var count atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			key, ok := done(ev.Object)
			if !ok {
				continue
			}
			now := time.Now()
			mu.Lock()
			if _, seen := doneAt[key]; !seen {
				doneAt[key] = now
				count.Add(1)
			}
			mu.Unlock()
		}
	}()
	fmt.Printf("bench: peer %s: %d deployments\n", prefix, n)
	var sent, uids sync.Map
	start := time.Now()
	if err := parallel(8, n, func(i int) error {
		obj, key := mk(i, fmt.Sprintf("%s-%03d", prefix, i%m), url)
		t0 := time.Now()
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
		sent.Store(key, t0)
		uids.Store(obj.GetUID(), t0)
		return nil
	}); err != nil {
		fail("create: %v", err)
	}
	for count.Load() < int64(n) {
		if time.Since(start) > *converged {
			fail("%s: only %d of %d Synced/Healthy after %s", prefix, count.Load(), n, *converged)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := peerSide{total: time.Since(start), created: map[types.UID]time.Time{}}
	uids.Range(func(k, v any) bool {
		s.created[k.(types.UID)] = v.(time.Time)
		return true
	})
	mu.Lock()
	sent.Range(func(k, v any) bool {
		s.lat = append(s.lat, doneAt[k.(string)].Sub(v.(time.Time)))
		return true
	})
	mu.Unlock()
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	s.load = loadAvg()
	fmt.Printf("bench: peer %s: all Synced/Healthy after %s (load %s)\n", prefix, s.total.Round(time.Millisecond), s.load)
	// Let Argo CD finish what follows (status writes, refreshes) before the other side.
	time.Sleep(5 * time.Second)
	return s
}
