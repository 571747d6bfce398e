package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
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
	// Argo CD refreshes every Application every 10 s in the stack
	// (ARGOCD_RECONCILIATION_TIMEOUT): left in place, the Applications of the
	// sides before make each side's time depend on the phase of their refresh
	// waves against its burst.
	peerClean = flag.Bool("peer-clean", true, "delete each side's objects (and wait for its Applications to go) before the next side")
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
	// start is the first create; doneAt each object's Synced/Healthy, by
	// key; uids each object's UID, by key.
	start  time.Time
	doneAt map[string]time.Time
	uids   map[string]types.UID
	// trace is what appTrace saw of the side's Applications.
	trace string
	// cpu is the CPU each process used during the side.
	cpu string
	// updates per object (GitOpsDeployment or Application) until all were
	// Synced/Healthy.
	updates float64
	// sidecarWork is the sidecar's reconciles and API calls during the side.
	sidecarWork string
	// gdChanges is what the GitOpsDeployments' updates changed.
	gdChanges string
	// apiWrites are the writes the API server served during the side.
	apiWrites string
}

func runPeer(b *testing.B) {
	ctx := context.Background()
	n, m := *peerN, *peerM
	load := loadAvg()
	kopts := stack.KubeOptions{Name: "bench-peer", ControllerManager: true}
	args, pprofURL := profiling(b, &kopts)
	kube, err := stack.StartKube(ctx, kopts)
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
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoRedisAddr: argo.RedisAddr, Args: args})
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
	// Every Application event: when each appeared (the sidecar's part of our
	// side), Argo CD's first look, its own Synced/Healthy, who wrote it.
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
	trace := newAppTrace()
	go func() {
		for ev := range aw.ResultChan() {
			trace.observe(ev)
		}
	}()
	withToApp := func(s peerSide) peerSide {
		trace.mu.Lock()
		for uid, t0 := range s.created {
			if e, ok := trace.apps[argocd.ApplicationName(string(uid))]; ok {
				s.toApp = append(s.toApp, e.added.Sub(t0))
			}
		}
		trace.mu.Unlock()
		sort.Slice(s.toApp, func(i, j int) bool { return s.toApp[i] < s.toApp[j] })
		var names []string
		done := map[string]time.Time{}
		for key, uid := range s.uids {
			name := argocd.ApplicationName(string(uid))
			names = append(names, name)
			done[name] = s.doneAt[key]
		}
		s.trace = trace.summary(names, s.start, done)
		return s
	}
	withTrace := func(s peerSide) peerSide {
		var names []string
		for key := range s.uids {
			names = append(names, strings.TrimPrefix(key, argoNS+"/"))
		}
		s.trace = trace.summary(names, s.start, nil)
		return s
	}
	procs := stackPids(kube, side.Pid())
	for _, p := range argo.Processes() {
		switch {
		case strings.HasSuffix(p.Name, "/application-controller"):
			procs["argo cd controller"] = p.Pid()
		case strings.HasSuffix(p.Name, "/repo-server"):
			procs["argo cd repo-server"] = p.Pid()
		case strings.HasSuffix(p.Name, "/redis"):
			procs["argo cd redis"] = p.Pid()
		}
	}
	delete(procs, "bench clients")
	apiHC, err := rest.HTTPClientFor(kube.Config)
	if err != nil {
		b.Fatal(err)
	}
	metered := func(run func(int) peerSide, name string, round int) peerSide {
		var prof sync.WaitGroup
		if dir := profileDir(); dir != "" {
			// The first 20 s of the side: its burst and Argo CD's work.
			hc, err := rest.HTTPClientFor(kube.Config)
			if err != nil {
				b.Fatal(err)
			}
			hc.Timeout = time.Minute
			for _, p := range []struct {
				hc        *http.Client
				url, file string
			}{
				{&http.Client{Timeout: time.Minute}, pprofURL + "/debug/pprof/profile", fmt.Sprintf("sidecar-%s-r%d.cpu.pprof", name, round)},
				{hc, kube.URL + "/debug/pprof/profile", fmt.Sprintf("kube-apiserver-%s-r%d.cpu.pprof", name, round)},
			} {
				prof.Add(1)
				go func() {
					defer prof.Done()
					if err := profile(ctx, p.hc, p.url, dir, p.file, 20*time.Second); err != nil {
						fmt.Println("bench: profile:", err)
					}
				}()
			}
		}
		m := newCPUMeter(procs)
		before, _ := scrape(side)
		apiBefore, _ := scrapeWith(apiHC, kube.URL+"/metrics")
		s := run(round)
		s.cpu = m.String()
		if after, err := scrapeWith(apiHC, kube.URL+"/metrics"); err == nil && apiBefore != nil {
			// Every client's writes, by resource, as the API server counted them.
			var parts []string
			for _, r := range []struct{ resource, subresource, verb string }{
				{"gitopsdeployments", "", "POST"}, {"gitopsdeployments", "status", "PATCH"},
				{"applications", "", "POST"}, {"applications", "", "APPLY"}, {"applications", "", "PATCH"}, {"applications", "", "PUT"},
				{"appprojects", "", "APPLY"}, {"events", "", "POST"}, {"events", "", "PATCH"},
			} {
				// Labels are sorted: ... resource, scope, subresource, verb, version.
				labels := []string{fmt.Sprintf(`,resource="%s",`, r.resource), fmt.Sprintf(`,subresource="%s",verb="%s",`, r.subresource, r.verb)}
				if v := (after.sumAll("apiserver_request_total", labels...) - apiBefore.sumAll("apiserver_request_total", labels...)) / float64(*peerN); v > 0 {
					name := r.resource
					if r.subresource != "" {
						name += "/" + r.subresource
					}
					parts = append(parts, fmt.Sprintf("%s %s %.2f", r.verb, name, v))
				}
			}
			s.apiWrites = "API server writes per deployment: " + strings.Join(parts, ", ")
		}
		if after, err := scrape(side); err == nil && before != nil {
			per := func(name, label string) float64 {
				return (after.sum(name, label) - before.sum(name, label)) / float64(*peerN)
			}
			s.sidecarWork = fmt.Sprintf("sidecar per deployment: %.1f GitOpsDeployment reconciles, %.1f tenant reconciles, %.1f writes (%.1f POST, %.1f PATCH), %.1f reads",
				per("controller_runtime_reconcile_total", `controller="gitopsdeployment"`), per("controller_runtime_reconcile_total", `controller="tenant"`),
				(sumMethods(after, writeMethodsRE)-sumMethods(before, writeMethodsRE))/float64(*peerN),
				(sumMethods(after, "POST")-sumMethods(before, "POST"))/float64(*peerN), (sumMethods(after, "PATCH")-sumMethods(before, "PATCH"))/float64(*peerN),
				(sumMethods(after, "GET LIST")-sumMethods(before, "GET LIST"))/float64(*peerN))
		}
		prof.Wait()
		return s
	}
	ours0, direct0 := ours, direct
	ours = func(round int) peerSide { return metered(ours0, "ours", round) }
	direct = func(round int) peerSide { return metered(direct0, "direct", round) }
	var oursAll, directAll []peerSide
	runOurs := func(round int) {
		oursAll = append(oursAll, withToApp(ours(round)))
		if *peerClean {
			prefix := fmt.Sprintf("ours-r%d", round)
			for j := 0; j < m; j++ {
				if err := c.DeleteAllOf(ctx, &v1.GitOpsDeployment{}, client.InNamespace(fmt.Sprintf("%s-%03d", prefix, j))); err != nil {
					b.Fatal(err)
				}
			}
			waitNoApplications(b, ctx, c, fail)
		}
	}
	runDirect := func(round int) {
		directAll = append(directAll, withTrace(direct(round)))
		if *peerClean {
			for key := range directAll[len(directAll)-1].uids {
				app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: strings.TrimPrefix(key, argoNS+"/")}}
				if err := client.IgnoreNotFound(c.Delete(ctx, app)); err != nil {
					b.Fatal(err)
				}
			}
			waitNoApplications(b, ctx, c, fail)
		}
	}
	for round := 1; round <= *peerRounds; round++ {
		if round%2 == 1 {
			runOurs(round)
			runDirect(round)
		} else {
			runDirect(round)
			runOurs(round)
		}
	}

	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Peer: %d GitOpsDeployments through the sidecar vs %d Argo CD Applications created directly, to Synced/Healthy\n\n", n, n)
	clean := "each side's Applications left in place (refreshed every 10 s) during the sides after it"
	if *peerClean {
		clean = "each side's objects deleted, and its Applications gone, before the next side starts"
	}
	fmt.Fprintf(&sb, "%s Real Argo CD %s controllers; each side's %d deployments over %d namespaces, one ConfigMap each, its own copy of the repository; odd rounds run the GitOpsDeployments first; %s.\n\n", machineLine(load), stack.ArgoCDVersion, n, m, clean)
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
	sb.WriteString("\nWhere the time went, from a watch on the Applications:\n\n")
	for i := range oursAll {
		fmt.Fprintf(&sb, "- round %d, through the sidecar: %s; GitOpsDeployment updates each until all Synced/Healthy %.1f (%s); %s; %s; CPU: %s\n", i+1, oursAll[i].trace, oursAll[i].updates, oursAll[i].gdChanges, oursAll[i].sidecarWork, oursAll[i].apiWrites, oursAll[i].cpu)
		fmt.Fprintf(&sb, "- round %d, directly: %s; %s; CPU: %s\n", i+1, directAll[i].trace, directAll[i].apiWrites, directAll[i].cpu)
	}
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
	var count, updates atomic.Int64
	// What each update of a GitOpsDeployment changed in its status, and how
	// soon after the one before: what coalescing the mirror would save.
	prevGD := map[string]*v1.GitOpsDeployment{}
	lastGD := map[string]time.Time{}
	changed := map[string]int{}
	var within100ms int
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				updates.Add(1)
			}
			if gd, ok := ev.Object.(*v1.GitOpsDeployment); ok {
				k := gd.Namespace + "/" + gd.Name
				mu.Lock()
				if p := prevGD[k]; p != nil && ev.Type == watch.Modified {
					var parts []string
					for _, f := range []struct {
						name string
						a, b any
					}{{"sync", p.Status.Sync, gd.Status.Sync}, {"health", p.Status.Health, gd.Status.Health}, {"resources", p.Status.Resources, gd.Status.Resources},
						{"reconciledState", p.Status.ReconciledState, gd.Status.ReconciledState}, {"operationState", p.Status.OperationState, gd.Status.OperationState},
						{"conditions", p.Status.Conditions, gd.Status.Conditions}, {"observedGeneration", p.Status.ObservedGeneration, gd.Status.ObservedGeneration}} {
						if !argocd.Equal(f.a, f.b) {
							parts = append(parts, f.name)
						}
					}
					changed[strings.Join(parts, "+")]++
					if time.Since(lastGD[k]) < 100*time.Millisecond {
						within100ms++
					}
				}
				prevGD[k], lastGD[k] = gd, time.Now()
				mu.Unlock()
			}
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
	var sent, uids, keyUIDs sync.Map
	start := time.Now()
	if err := parallel(8, n, func(i int) error {
		obj, key := mk(i, fmt.Sprintf("%s-%03d", prefix, i%m), url)
		t0 := time.Now()
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
		sent.Store(key, t0)
		uids.Store(obj.GetUID(), t0)
		keyUIDs.Store(key, obj.GetUID())
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
	s := peerSide{total: time.Since(start), created: map[types.UID]time.Time{}, start: start, doneAt: map[string]time.Time{}, uids: map[string]types.UID{}}
	keyUIDs.Range(func(k, v any) bool {
		s.uids[k.(string)] = v.(types.UID)
		return true
	})
	uids.Range(func(k, v any) bool {
		s.created[k.(types.UID)] = v.(time.Time)
		return true
	})
	mu.Lock()
	for k, v := range doneAt {
		s.doneAt[k] = v
	}
	sent.Range(func(k, v any) bool {
		s.lat = append(s.lat, doneAt[k.(string)].Sub(v.(time.Time)))
		return true
	})
	mu.Unlock()
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	s.load = loadAvg()
	if len(changed) > 0 {
		mu.Lock()
		var parts []string
		for k, v := range changed {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(v)/float64(n)))
		}
		sort.Strings(parts)
		s.gdChanges = fmt.Sprintf("status changes per GitOpsDeployment: %s; %.2f within 100 ms of the one before", strings.Join(parts, ", "), float64(within100ms)/float64(n))
		mu.Unlock()
	}
	s.updates = float64(updates.Load()) / float64(n)
	fmt.Printf("bench: peer %s: all Synced/Healthy after %s (load %s)\n", prefix, s.total.Round(time.Millisecond), s.load)
	// Let Argo CD finish what follows (status writes, refreshes) before the other side.
	time.Sleep(5 * time.Second)
	return s
}

// waitNoApplications waits until the Argo CD namespace holds no Application.
func waitNoApplications(b *testing.B, ctx context.Context, c client.Client, fail func(string, ...any)) {
	deadline := time.Now().Add(*converged)
	for {
		var apps argov1alpha1.ApplicationList
		if err := c.List(ctx, &apps, client.InNamespace(argoNS)); err != nil {
			b.Fatal(err)
		}
		if len(apps.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			fail("%d Applications still there after %s", len(apps.Items), *converged)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
