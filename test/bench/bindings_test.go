package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argocdsettings"
	metricsPkg "github.com/gitops-service/gitops-service/reconcilers/metrics"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	bindPromotions = flag.Int("promotions", 100, "PromotionRuns created at once in the bindings benchmark's last phase")
	bindSides      = flag.String("bindings-sides", "bindings,gitopsdeployments", "the bindings benchmark's sides, in the order they run")
	bindResync     = flag.String("bindings-argocd-resync", "",
		"Argo CD's timeout.reconciliation for the bindings benchmark (empty: the test stack's 10s; Argo CD's own default is 180s)")
	bindParams = flag.String("bindings-argocd-params", "install",
		"applicationset controller settings for the bindings benchmark: install (those the sidecar writes, reconcilers/argocdsettings) or default (Argo CD's)")
	bindRepos = flag.String("bindings-repos", "tenant",
		"the bindings benchmark's GitOps repositories: tenant (one per tenant namespace, on each side) or one (all applications in one, each side)")
)

const (
	// bindComponents per binding (per GitOpsDeployment side application).
	bindComponents = 3
	// Goals of issue 27: the binding path within 1.2x of the GitOpsDeployment
	// path, and a Snapshot change on every binding in all Applications within
	// 60 s at N=300.
	targetBindRatio  = 1.2
	targetBindChange = time.Minute
	bindParallel     = 16
)

// BenchmarkBindings is a release day for the App Studio path, with the real
// Argo CD (its applicationset controller among it): N bindings of 3 components
// over M tenants (-n, default 300; -m, default N/30, at least 10) created in a burst, until
// every Application is Synced/Healthy and runs its image; every binding moved
// to a new Snapshot at once, until every Application runs the new image; then
// -promotions PromotionRuns at once, until each is Completed and its
// Applications run the promoted image. The peer, in the same run: the same
// 3N Applications made from 3N GitOpsDeployments, whose path moves to a
// kustomization with the new image tag in the same phases. Each side runs all
// its phases, then its objects are deleted and its Applications gone before
// the other starts; each deploys its own copy of the repositories (one per
// tenant unless -bindings-repos=one).
func BenchmarkBindings(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runBindings(b)
	}
}

// bindWorld is one side's objects: N applications a000.. of 3 components
// c0..c2 each, application i in tenant i%m; id "aNNN-cJ" names a component's
// Deployment and Application on both sides.
type bindWorld struct {
	prefix string
	n, m   int
}

func (w bindWorld) ns(i int) string        { return fmt.Sprintf("%s-t%02d", w.prefix, i%w.m) }
func (w bindWorld) app(i int) string       { return fmt.Sprintf("a%03d", i) }
func (w bindWorld) id(i, j int) string     { return fmt.Sprintf("a%03d-c%d", i, j) }
func (w bindWorld) image(id string) string { return "quay.io/bench/" + id }

// bindFiles is a repository: each component's Deployment (one replica,
// whose Pod stack.RunPods reports running: Argo CD reports the images of the
// running Pods) of the applications i that in says are in it and, for the
// GitOpsDeployments (tags given), kustomizations gd/vT/<id> setting image tag
// T on it.
func bindFiles(w bindWorld, in func(i int) bool, tags ...string) map[string]string {
	files := map[string]string{}
	for i := 0; i < w.n; i++ {
		if !in(i) {
			continue
		}
		for j := 0; j < bindComponents; j++ {
			id := w.id(i, j)
			files["comp/"+id+"/kustomization.yaml"] = "resources:\n- deployment.yaml\n"
			files["comp/"+id+"/deployment.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
        %[3]s: "true"
    spec:
      containers:
      - name: %[1]s
        image: %[2]s:0
`, id, w.image(id), stack.PodRunLabel)
			for _, tag := range tags {
				files["gd/v"+tag+"/"+id+"/kustomization.yaml"] = fmt.Sprintf("resources:\n- ../../../comp/%s\nimages:\n- name: %s\n  newTag: %q\n", id, w.image(id), tag)
			}
		}
	}
	return files
}

// appState is what the benchmark watches of each Application, by id.
type appState struct {
	spec     string // the image tag its spec deploys
	compared string // the image tag of the spec Argo CD's sync status is of
	sync     string
	health   string
	images   []string
}

func (s appState) String() string {
	return fmt.Sprintf("spec %s, compared %s, %s/%s, images %v", s.spec, s.compared, s.sync, s.health, s.images)
}

// bindTracker follows every Application of the run: when each (by id) was
// first generated for, and first running, the tag a phase wants.
type bindTracker struct {
	mu     sync.Mutex
	ids    map[string]string // owner UID/component -> id
	want   map[string]string // id -> tag
	specAt map[string]time.Time
	// comparedAt: Argo CD first compared the Application at the tag.
	comparedAt map[string]time.Time
	doneAt     map[string]time.Time
	// updates counts the watch's modifications of each wanted Application
	// in the phase, whoever wrote them.
	updates map[string]int
	last    map[string]appState
	// pending is the last event of Applications seen before their owner's
	// create returned.
	pending map[string]*argov1alpha1.Application
}

func newBindTracker() *bindTracker {
	return &bindTracker{ids: map[string]string{}, want: map[string]string{}, last: map[string]appState{}, pending: map[string]*argov1alpha1.Application{}}
}

// expect starts a phase: ids must reach tag.
func (t *bindTracker) expect(ids []string, tag string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.want = map[string]string{}
	for _, id := range ids {
		t.want[id] = tag
	}
	t.specAt, t.comparedAt, t.doneAt, t.updates = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}, map[string]int{}
	// An Application already there and right (not expected) counts as it is.
	for id := range t.want {
		t.check(id, time.Now())
	}
}

func (t *bindTracker) observe(ev watch.Event) {
	app, ok := ev.Object.(*argov1alpha1.Application)
	if !ok || ev.Type == watch.Deleted || ev.Type == watch.Error {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := app.Labels[ownership.LabelOwnerUID] + "/" + app.Labels[as.LabelComponent]
	id := t.ids[key]
	if id == "" {
		t.pending[key] = app
		return
	}
	if _, ok := t.want[id]; ok && ev.Type == watch.Modified {
		t.updates[id]++
	}
	t.update(id, app)
}

// register names the Application of owner UID and component key.
func (t *bindTracker) register(key, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ids[key] = id
	if app := t.pending[key]; app != nil {
		delete(t.pending, key)
		t.update(id, app)
	}
}

func (t *bindTracker) update(id string, app *argov1alpha1.Application) {
	now := time.Now()
	s := appState{sync: string(app.Status.Sync.Status), health: string(app.Status.Health.Status), images: app.Status.Summary.Images}
	s.spec = tagOf(app.Spec.Source)
	s.compared = tagOf(&app.Status.Sync.ComparedTo.Source)
	t.last[id] = s
	t.check(id, now)
}

func (t *bindTracker) check(id string, now time.Time) {
	tag, ok := t.want[id]
	s, seen := t.last[id]
	if !ok || !seen {
		return
	}
	if _, ok := t.specAt[id]; !ok && s.spec == tag {
		t.specAt[id] = now
	}
	if _, ok := t.comparedAt[id]; !ok && s.spec == tag && s.compared == tag {
		t.comparedAt[id] = now
	}
	image := "quay.io/bench/" + id + ":" + tag
	if _, ok := t.doneAt[id]; !ok && s.spec == tag && s.compared == tag && s.sync == string(argov1alpha1.SyncStatusCodeSynced) && s.health == "Healthy" &&
		len(s.images) == 1 && s.images[0] == image {
		t.doneAt[id] = now
	}
}

// drop takes ids out of the phase (their change was given up).
func (t *bindTracker) drop(ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		delete(t.want, id)
		delete(t.doneAt, id)
	}
}

// tagOf is the image tag an Application source deploys: the binding's
// kustomize image <name>=<name>:<tag>, or the GitOpsDeployment's gd/v<tag>/<id>.
func tagOf(src *argov1alpha1.ApplicationSource) string {
	if src == nil {
		return ""
	}
	if src.Kustomize != nil && len(src.Kustomize.Images) == 1 {
		img := string(src.Kustomize.Images[0])
		return img[strings.LastIndex(img, ":")+1:]
	}
	if parts := strings.Split(src.Path, "/"); len(parts) == 3 && parts[0] == "gd" {
		return strings.TrimPrefix(parts[1], "v")
	}
	return ""
}

// stuck says where the ids not done are.
func (t *bindTracker) stuck() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts := map[string]int{}
	var example []string
	for id, tag := range t.want {
		if _, ok := t.doneAt[id]; ok {
			continue
		}
		s, seen := t.last[id]
		var k string
		switch {
		case !seen:
			k = "no Application"
		case s.spec != tag:
			k = "not generated for the tag"
		case s.compared != tag:
			k = "not yet compared at the tag"
		default:
			k = s.sync + "/" + s.health
		}
		counts[k]++
		if len(example) < 3 {
			example = append(example, id+": "+s.String())
		}
	}
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ") + "; e.g. " + strings.Join(example, "; ")
}

// bindPhase is one phase of one side.
type bindPhase struct {
	name  string
	count int           // Applications
	total time.Duration // first write -> last Application running the tag
	// generated: first write -> last Application generated for the tag
	// (its spec carries the new image), before Argo CD syncs it.
	generated time.Duration
	lat       []time.Duration
	gen       []time.Duration // write -> Application generated for the tag
	// compare: generated -> Argo CD's first comparison at the tag; sync:
	// that comparison -> done (synced, healthy, running the image).
	compare, sync []time.Duration
	updates       float64 // Application updates per Application
	// runs is, for PromotionRuns, create -> Completed.
	runs []time.Duration
	cpu  string
	load string
	// writes: the API server's writes per Application in the phase, by
	// resource (everyone's); generator: the plugin generator's requests per
	// binding and their mean time.
	writes, generator string
	// reconciles: the sidecar's reconciles per binding (per application's
	// GitOpsDeployments), by controller.
	reconciles string
}

// phaseWrites says the writes (POST, PUT, PATCH, APPLY, DELETE) the API server
// counted between two scrapes, per Application of the phase, by resource and
// verb, the largest first.
func phaseWrites(before, after metrics, apps int) string {
	counts := map[string]float64{}
	var all float64
	for k, v := range after {
		if !strings.HasPrefix(k, "apiserver_request_total{") {
			continue
		}
		label := func(name string) string {
			_, rest, ok := strings.Cut(k, ","+name+"=\"")
			if !ok {
				_, rest, ok = strings.Cut(k, "{"+name+"=\"")
			}
			if !ok {
				return ""
			}
			v, _, _ := strings.Cut(rest, "\"")
			return v
		}
		verb := label("verb")
		if !strings.Contains(" POST PUT PATCH APPLY DELETE ", " "+verb+" ") {
			continue
		}
		d := v - before[k]
		if d <= 0 {
			continue
		}
		name := label("resource")
		if sub := label("subresource"); sub != "" {
			name += "/" + sub
		}
		counts[verb+" "+name] += d
		all += d
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	parts := []string{fmt.Sprintf("%.1f in all", all/float64(max(apps, 1)))}
	for _, k := range keys {
		if v := counts[k] / float64(max(apps, 1)); v >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

// generatorCalls says the plugin generator's requests per binding between two
// scrapes of the sidecar, and their mean time.
func generatorCalls(before, after metrics, bindings int) string {
	name := metricsPkg.HTTPRequestDurationName
	label := `server="generator"`
	calls := after.sum(name+"_count", label) - before.sum(name+"_count", label)
	secs := after.sum(name+"_sum", label) - before.sum(name+"_sum", label)
	if calls <= 0 {
		return "none"
	}
	return fmt.Sprintf("%.2f per binding, %.1f ms each on average", calls/float64(max(bindings, 1)), 1000*secs/calls)
}

// sidecarReconciles says the sidecar's reconciles per unit of the phase (a
// binding, or an application's 3 GitOpsDeployments) by the controllers that
// ran, between two scrapes.
func sidecarReconciles(before, after metrics, units int) string {
	const name = "controller_runtime_reconcile_total"
	var parts []string
	for _, c := range []string{"snapshotenvironmentbinding", "gitopsdeployment", "promotionrun", "tenant"} {
		label := `controller="` + c + `"`
		if d := after.sum(name, label) - before.sum(name, label); d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f", c, d/float64(max(units, 1))))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func runBindings(b *testing.B) {
	ctx := context.Background()
	n, m := 300, 0
	timeoutGiven := false
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "n":
			n = *total
		case "m":
			m = *spaces
		case "timeout":
			timeoutGiven = true
		}
	})
	if m == 0 {
		// 30-odd applications a tenant: N=1,000 spreads over 33 tenants.
		m = max(10, n/30)
	}
	timeout := *converged
	if !timeoutGiven {
		// A phase syncs 3N Applications in Argo CD's application
		// controller: 5m43s at N=300 on the quiet machine.
		timeout = max(timeout, time.Duration(n)*2*time.Second)
	}
	if *bindRepos != "tenant" && *bindRepos != "one" {
		b.Fatalf("-bindings-repos: %q is neither tenant nor one", *bindRepos)
	}
	promotions := min(*bindPromotions, n)
	load := loadAvg()
	root, _ := stack.RepoRoot()
	params, err := appSetParams(root, *bindParams)
	if err != nil {
		b.Fatal(err)
	}
	// Deployments roll out and their Pods run (RunPods).
	controllers := append(slices.Clone(stack.DefaultControllers), stack.WorkloadControllers...)
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "bench-bindings", ControllerManager: true, Controllers: controllers})
	if err != nil {
		b.Fatal(err)
	}
	defer kube.Stop()
	podsCtx, stopPods := context.WithCancel(ctx)
	defer stopPods()
	if err := kube.RunPods(podsCtx, stack.PodRunLabel+"=true"); err != nil {
		b.Fatal(err)
	}
	var argoCM map[string]string
	if *bindResync != "" {
		argoCM = map[string]string{"timeout.reconciliation": *bindResync}
	}
	argo, err := stack.StartArgoCD(ctx, kube, stack.ArgoOptions{ExtraCmdParams: params, ExtraConfig: argoCM})
	if err != nil {
		b.Fatal(err)
	}
	defer argo.Stop()
	if err := kube.InstallCRDs(ctx, root+"/manifests/crd"); err != nil {
		b.Fatal(err)
	}
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{ArgoRedisAddr: argo.RedisAddr, Args: strings.Fields(*sidecarArgs)})
	if err != nil {
		b.Fatal(err)
	}
	defer side.Close()
	if err := argo.RegisterGenerator(ctx, argocd.GeneratorConfigMap, side.GeneratorURL, side.GeneratorToken); err != nil {
		b.Fatal(err)
	}
	fail := func(format string, args ...any) {
		side.WriteLogs(os.Stderr)
		argo.WriteLogs(os.Stderr)
		b.Fatalf(format, args...)
	}
	apiHC, err := rest.HTTPClientFor(kube.Config)
	if err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(kube.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: sidecar.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	gitRoot, err := os.MkdirTemp("", "gitops-bench-bindings-git-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(gitRoot)

	tr := newBindTracker()
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
	go func() {
		for ev := range aw.ResultChan() {
			tr.observe(ev)
		}
	}()
	procs := stackPids(kube, side.Pid())
	delete(procs, "bench clients")
	for _, p := range argo.Processes() {
		for suffix, name := range map[string]string{"/application-controller": "argo cd controller", "/applicationset-controller": "argo cd applicationset controller", "/repo-server": "argo cd repo-server"} {
			if strings.HasSuffix(p.Name, suffix) {
				procs[name] = p.Pid()
			}
		}
	}

	// phase writes to each unit (write(i) returns the ids it moves), then waits
	// until every id runs tag; runsDone, if set, until it says all are done
	// and returns each one's latency.
	phase := func(name, tag string, units int, ids func(i int) []string, write func(i int) error, runsDone func() ([]time.Duration, bool)) bindPhase {
		var all []string
		for i := 0; i < units; i++ {
			all = append(all, ids(i)...)
		}
		tr.expect(all, tag)
		meter := newCPUMeter(procs)
		apiBefore, _ := scrapeWith(apiHC, kube.URL+"/metrics")
		sideBefore, _ := scrape(side)
		var mu sync.Mutex
		sent := map[string]time.Time{}
		fmt.Printf("bench: %s: %d writes, %d Applications to run tag %s (load %s)\n", name, units, len(all), tag, loadAvg())
		start := time.Now()
		if err := parallel(bindParallel, units, func(i int) error {
			t0 := time.Now()
			if err := write(i); err != nil {
				return err
			}
			mu.Lock()
			for _, id := range ids(i) {
				sent[id] = t0
			}
			mu.Unlock()
			return nil
		}); err != nil {
			fail("%s: %v", name, err)
		}
		fmt.Printf("bench: %s: written in %s\n", name, time.Since(start).Round(time.Millisecond))
		lastProgress := time.Now()
		var runs []time.Duration
		for {
			tr.mu.Lock()
			done, gen, want := len(tr.doneAt), len(tr.specAt), len(tr.want)
			tr.mu.Unlock()
			runsOK := true
			if runsDone != nil {
				runs, runsOK = runsDone()
			}
			if done == want && runsOK {
				break
			}
			if time.Since(start) > timeout {
				fail("%s: %d of %d Applications running tag %s, %d generated for it, after %s: %s", name, done, len(all), tag, gen, timeout, tr.stuck())
			}
			if time.Since(lastProgress) >= 10*time.Second {
				lastProgress = time.Now()
				fmt.Printf("bench: %s: %s: %d generated, %d of %d running tag %s (load %s)\n", name, time.Since(start).Round(time.Second), gen, done, len(all), tag, loadAvg())
			}
			time.Sleep(50 * time.Millisecond)
		}
		p := bindPhase{name: name, runs: runs, cpu: meter.String()}
		if after, err := scrapeWith(apiHC, kube.URL+"/metrics"); err == nil && apiBefore != nil {
			p.writes = phaseWrites(apiBefore, after, len(all))
		}
		if after, err := scrape(side); err == nil && sideBefore != nil {
			p.generator = generatorCalls(sideBefore, after, units)
			p.reconciles = sidecarReconciles(sideBefore, after, units)
		}
		tr.mu.Lock()
		p.count = len(tr.want)
		var last, lastGen time.Time
		for _, id := range all {
			if _, ok := tr.want[id]; !ok {
				continue
			}
			p.lat = append(p.lat, tr.doneAt[id].Sub(sent[id]))
			p.gen = append(p.gen, tr.specAt[id].Sub(sent[id]))
			p.compare = append(p.compare, tr.comparedAt[id].Sub(tr.specAt[id]))
			p.sync = append(p.sync, tr.doneAt[id].Sub(tr.comparedAt[id]))
			p.updates += float64(tr.updates[id])
			if tr.doneAt[id].After(last) {
				last = tr.doneAt[id]
			}
			if tr.specAt[id].After(lastGen) {
				lastGen = tr.specAt[id]
			}
		}
		tr.mu.Unlock()
		p.total, p.generated = last.Sub(start), lastGen.Sub(start)
		p.updates /= float64(max(len(p.lat), 1))
		for _, l := range [][]time.Duration{p.lat, p.gen, p.compare, p.sync, p.runs} {
			slices.Sort(l)
		}
		p.load = loadAvg()
		fmt.Printf("bench: %s: all %d generated for tag %s after %s, running it after %s (load %s)\n", name, len(all), tag, p.generated.Round(time.Millisecond), p.total.Round(time.Millisecond), p.load)
		// Let Argo CD finish what follows (status writes) before the next phase.
		time.Sleep(5 * time.Second)
		return p
	}
	idsOf := func(w bindWorld) func(int) []string {
		return func(i int) []string {
			var ids []string
			for j := 0; j < bindComponents; j++ {
				ids = append(ids, w.id(i, j))
			}
			return ids
		}
	}
	createNS := func(w bindWorld) {
		for t := 0; t < m; t++ {
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns(t)}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// repos makes w's repositories (each holding what its side deploys) and
	// returns application i's URL. Argo CD's repo-server generates the
	// manifests of one repository one at a time for kustomize sources with
	// image overrides (the bindings'): one repository for all is the worst
	// case for that side, one per tenant what tenants that share no
	// repository have (App Studio has one per application).
	repos := func(w bindWorld, tags ...string) func(i int) string {
		newRepo := func(name string, in func(i int) bool) string {
			r, err := stack.NewGitRepo(gitRoot, name)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Commit(bindFiles(w, in, tags...), "bench"); err != nil {
				b.Fatal(err)
			}
			return r.URL
		}
		if *bindRepos == "one" {
			url := newRepo(w.prefix, func(int) bool { return true })
			return func(int) string { return url }
		}
		urls := make([]string, m)
		for t := 0; t < m; t++ {
			urls[t] = newRepo(w.ns(t), func(i int) bool { return i%m == t })
		}
		return func(i int) string { return urls[i%m] }
	}

	// runFailed are the PromotionRuns that completed with Failure, with why.
	var runFailed map[string]string
	bindingSide := func() []bindPhase {
		w := bindWorld{prefix: "seb", n: n, m: m}
		url := repos(w)
		createNS(w)
		fmt.Printf("bench: bindings: setting up %d applications of %d components in %d tenants\n", n, bindComponents, m)
		snapshot := func(i int, tag string) error {
			s := &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns(i), Name: w.app(i) + "-" + tag}, Spec: as.SnapshotSpec{Application: w.app(i)}}
			for j := 0; j < bindComponents; j++ {
				s.Spec.Components = append(s.Spec.Components, as.SnapshotComponent{Name: w.id(i, j), ContainerImage: w.image(w.id(i, j)) + ":" + tag})
			}
			return c.Create(ctx, s)
		}
		for t := 0; t < m; t++ {
			env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns(t), Name: "dev"}, Spec: as.EnvironmentSpec{DisplayName: "dev",
				DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}
			if err := c.Create(ctx, env); err != nil {
				b.Fatal(err)
			}
		}
		if err := parallel(bindParallel, n, func(i int) error {
			ns := w.ns(i)
			if err := c.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.app(i)}, Spec: as.ApplicationSpec{DisplayName: w.app(i)}}); err != nil {
				return err
			}
			for j := 0; j < bindComponents; j++ {
				id := w.id(i, j)
				comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
					Spec: as.ComponentSpec{ComponentName: id, Application: w.app(i), ContainerImage: w.image(id) + ":0"}}
				if err := c.Create(ctx, comp); err != nil {
					return err
				}
				comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: url(i), Branch: "main", Context: "comp/" + id}
				if err := c.Status().Update(ctx, comp); err != nil {
					return err
				}
			}
			return snapshot(i, "1")
		}); err != nil {
			b.Fatal(err)
		}
		bindingOf := func(i int) *as.SnapshotEnvironmentBinding {
			return &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns(i), Name: w.app(i) + "-dev"},
				Spec: as.SnapshotEnvironmentBindingSpec{Application: w.app(i), Environment: "dev", Snapshot: w.app(i) + "-1"}}
		}
		var phases []bindPhase
		phases = append(phases, phase("bindings: create", "1", n, idsOf(w), func(i int) error {
			seb := bindingOf(i)
			if err := c.Create(ctx, seb); err != nil {
				return err
			}
			for j := 0; j < bindComponents; j++ {
				// A generated Application's component label is the Snapshot's component name.
				tr.register(string(seb.UID)+"/"+w.id(i, j), w.id(i, j))
			}
			return nil
		}, nil))
		if err := parallel(bindParallel, n, func(i int) error { return snapshot(i, "2") }); err != nil {
			b.Fatal(err)
		}
		phases = append(phases, phase("bindings: new Snapshot on every binding", "2", n, idsOf(w), func(i int) error {
			seb := bindingOf(i)
			patch := []byte(fmt.Sprintf(`{"spec":{"snapshot":%q}}`, w.app(i)+"-2"))
			return c.Patch(ctx, seb, client.RawPatch("application/merge-patch+json", patch))
		}, nil))
		// Promotions: applications 0..P-1 (round robin over the tenants).
		if err := parallel(bindParallel, promotions, func(i int) error { return snapshot(i, "3") }); err != nil {
			b.Fatal(err)
		}
		var runMu sync.Mutex
		runStart := map[string]time.Time{}
		runDone := map[string]time.Duration{}
		runFailed = map[string]string{}
		phases = append(phases, phase(fmt.Sprintf("bindings: %d PromotionRuns", promotions), "3", promotions, idsOf(w), func(i int) error {
			run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns(i), Name: w.app(i) + "-promote-3"},
				Spec: as.PromotionRunSpec{Snapshot: w.app(i) + "-3", Application: w.app(i), ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev"}}}
			t0 := time.Now()
			if err := c.Create(ctx, run); err != nil {
				return err
			}
			runMu.Lock()
			runStart[run.Namespace+"/"+run.Name] = t0
			runMu.Unlock()
			return nil
		}, func() ([]time.Duration, bool) {
			var runs as.PromotionRunList
			if err := c.List(ctx, &runs); err != nil {
				return nil, false
			}
			now := time.Now()
			runMu.Lock()
			defer runMu.Unlock()
			for _, r := range runs.Items {
				k := r.Namespace + "/" + r.Name
				if _, ok := runDone[k]; ok || r.Status.State != as.PromotionRunStateCompleted {
					continue
				}
				if r.Status.CompletionResult != as.PromotionRunCompleteResultSuccess {
					// Reported, not fatal: a machine too busy for the
					// sidecar's --promotion-timeout is a result too.
					runFailed[k] = fmt.Sprintf("%s: %s", k, r.Status.CompletionResult)
				}
				runDone[k] = now.Sub(runStart[k])
			}
			var out []time.Duration
			for _, d := range runDone {
				out = append(out, d)
			}
			// The Applications of a failed run need not get there.
			for k := range runFailed {
				ns, name, _ := strings.Cut(k, "/")
				for i := 0; i < promotions; i++ {
					if w.ns(i) == ns && w.app(i)+"-promote-3" == name {
						tr.drop(idsOf(w)(i))
					}
				}
			}
			return out, len(runDone) == promotions
		}))
		fmt.Println("bench: bindings: deleting them, waiting for their Applications to go")
		for t := 0; t < m; t++ {
			if err := c.DeleteAllOf(ctx, &as.SnapshotEnvironmentBinding{}, client.InNamespace(w.ns(t))); err != nil {
				b.Fatal(err)
			}
		}
		waitNoApplications(b, ctx, c, fail)
		return phases
	}

	gitopsDeploymentSide := func() []bindPhase {
		w := bindWorld{prefix: "gd", n: n, m: m}
		url := repos(w, "1", "2", "3")
		createNS(w)
		gdOf := func(i, j int) *v1.GitOpsDeployment {
			return &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns(i), Name: w.id(i, j)}}
		}
		move := func(tag string) func(i int) error {
			return func(i int) error {
				for j := 0; j < bindComponents; j++ {
					patch := []byte(fmt.Sprintf(`{"spec":{"source":{"path":%q}}}`, "gd/v"+tag+"/"+w.id(i, j)))
					if err := c.Patch(ctx, gdOf(i, j), client.RawPatch("application/merge-patch+json", patch)); err != nil {
						return err
					}
				}
				return nil
			}
		}
		var phases []bindPhase
		phases = append(phases, phase("GitOpsDeployments: create", "1", n, idsOf(w), func(i int) error {
			for j := 0; j < bindComponents; j++ {
				gd := gdOf(i, j)
				gd.Spec = v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{RepoURL: url(i), Path: "gd/v1/" + w.id(i, j)}, Type: v1.GitOpsDeploymentSpecTypeAutomated}
				if err := c.Create(ctx, gd); err != nil {
					return err
				}
				tr.register(string(gd.UID)+"/", w.id(i, j))
			}
			return nil
		}, nil))
		phases = append(phases, phase("GitOpsDeployments: new image on every one", "2", n, idsOf(w), move("2"), nil))
		phases = append(phases, phase(fmt.Sprintf("GitOpsDeployments: new image on those of %d applications", promotions), "3", promotions, idsOf(w), move("3"), nil))
		fmt.Println("bench: GitOpsDeployments: deleting them, waiting for their Applications to go")
		for t := 0; t < m; t++ {
			if err := c.DeleteAllOf(ctx, &v1.GitOpsDeployment{}, client.InNamespace(w.ns(t))); err != nil {
				b.Fatal(err)
			}
		}
		waitNoApplications(b, ctx, c, fail)
		return phases
	}

	var ours, peer []bindPhase
	for _, s := range strings.Split(*bindSides, ",") {
		switch s {
		case "bindings":
			ours = bindingSide()
		case "gitopsdeployments":
			peer = gitopsDeploymentSide()
		default:
			b.Fatalf("-bindings-sides: unknown side %q", s)
		}
	}

	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	stats := func(l []time.Duration) string {
		if len(l) == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s / %s", ms(pct(l, 50)), ms(pct(l, 99)), ms(l[len(l)-1]))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Bindings: a release day, N=%d bindings of %d components (%d Applications) over %d tenants, against %d GitOpsDeployments\n\n", n, bindComponents, n*bindComponents, m, n*bindComponents)
	settings := "Argo CD's defaults"
	if len(params) > 0 {
		var kv []string
		for k, v := range params {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		settings = "the install's (" + strings.Join(kv, ", ") + ")"
	}
	layout := fmt.Sprintf("one GitOps repository per tenant (%d applications each)", (n+m-1)/m)
	if *bindRepos == "one" {
		layout = "one GitOps repository for all applications"
	}
	fmt.Fprintf(&sb, "%s Real Argo CD %s controllers, applicationset controller settings: %s; Argo CD's timeout.reconciliation %s; the sidecar serving the plugin generator; %s on each side. Each Application deploys one Deployment (1 replica, its Pod reported running by the stack in place of a kubelet) whose image the binding's Snapshot (kustomize image override) or the GitOpsDeployment's path (a kustomization setting the tag) chooses; done = Synced and Healthy at the spec with the new image, and Argo CD reporting only the new image running. Sides in the order %s, each with its own copy of the repository; each side's objects deleted, and its Applications gone, before the next. Per phase: first write -> last Application done (total), and each Application's write of its binding, PromotionRun or GitOpsDeployment -> done (p50 / p99 / max).\n\n",
		machineLine(load), stack.ArgoCDVersion, settings, cmp.Or(*bindResync, "10s (the test stack's)"), layout, *bindSides)
	sb.WriteString("| phase | Applications | bindings: total | each (p50 / p99 / max) | of which generated | GitOpsDeployments: total | each (p50 / p99 / max) | of which Application updated | bindings / GitOpsDeployments |\n|---|---|---|---|---|---|---|---|---|\n")
	var sumOurs, sumPeer time.Duration
	for i := 0; i < max(len(ours), len(peer)); i++ {
		var o, p bindPhase
		if i < len(ours) {
			o = ours[i]
		}
		if i < len(peer) {
			p = peer[i]
		}
		ratio := "-"
		if o.total > 0 && p.total > 0 {
			ratio = fmt.Sprintf("%.2f", o.total.Seconds()/p.total.Seconds())
		}
		sumOurs += o.total
		sumPeer += p.total
		fmt.Fprintf(&sb, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", strings.TrimPrefix(o.name, "bindings: "), max(o.count, p.count),
			ms(o.total), stats(o.lat), stats(o.gen), ms(p.total), stats(p.lat), stats(p.gen), ratio)
	}
	if len(ours) > 0 && len(peer) > 0 {
		ratio := sumOurs.Seconds() / sumPeer.Seconds()
		fmt.Fprintf(&sb, "| end to end | | %s | | | %s | | | %.2f (target <= %.1f: %s) |\n", ms(sumOurs), ms(sumPeer), ratio, targetBindRatio, mark(ratio <= targetBindRatio))
	}
	sb.WriteString("\n")
	if len(ours) == 3 {
		// The goal is the Snapshot change reflected in all Applications:
		// their specs, our hop. Running it is Argo CD's application
		// controller's syncing, shown beside the peer's, which waits on it too.
		fmt.Fprintf(&sb, "- Snapshot change on every binding -> all %d Applications generated for the new Snapshot (first write -> last spec with the new image): %s (target <= %s: %s)\n", ours[1].count, ms(ours[1].generated), targetBindChange, mark(ours[1].generated <= targetBindChange))
		peerRun := "-"
		if len(peer) > 1 {
			peerRun = ms(peer[1].total) + " for the peer's GitOpsDeployments, whose Applications the sidecar updated within " + ms(peer[1].generated)
		}
		fmt.Fprintf(&sb, "- ... and all of them running it, after Argo CD's application controller synced them: %s (%s)\n", ms(ours[1].total), peerRun)
		fmt.Fprintf(&sb, "- PromotionRun created -> Completed (p50 / p99 / max of %d): %s; Failure: %d\n", len(ours[2].runs), stats(ours[2].runs), len(runFailed))
		var failed []string
		for _, why := range runFailed {
			failed = append(failed, why)
		}
		sort.Strings(failed)
		if len(failed) > 0 {
			fmt.Fprintf(&sb, "- PromotionRuns that failed (the sidecar's --promotion-timeout, 10m by default, is per Environment): %s; their Applications are left out of the phase's figures\n", strings.Join(failed, ", "))
		}
	}
	for _, p := range append(append([]bindPhase(nil), ours...), peer...) {
		fmt.Fprintf(&sb, "- %s: generated -> Argo CD's first comparison at it %s, -> done %s (p50 / p99 / max); %.2f Application updates each; load after %s; CPU: %s\n",
			p.name, stats(p.compare), stats(p.sync), p.updates, p.load, p.cpu)
		fmt.Fprintf(&sb, "  - API server writes per Application: %s; plugin generator requests: %s; the sidecar's reconciles per application: %s\n",
			cmp.Or(p.writes, "-"), cmp.Or(p.generator, "-"), cmp.Or(p.reconciles, "-"))
	}
	fmt.Println()
	fmt.Print(sb.String())
	if len(ours) > 0 && len(peer) > 0 {
		b.ReportMetric(sumOurs.Seconds()/sumPeer.Seconds(), "bindings/gitopsdeployments")
	}
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		name := fmt.Sprintf("bindings-N%d-%s", n, *bindParams)
		if *bindRepos == "tenant" {
			// Runs before 2026-11-29 had one repository for all.
			name += fmt.Sprintf("-repos%d", m)
		}
		if *bindResync != "" {
			name += "-resync" + *bindResync
		}
		path := resultsPath(name)
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + path)
	}
}

// appSetParams are the applicationset controller's keys the sidecar writes into
// argocd-cmd-params-cm ("install"), or none ("default").
func appSetParams(root, mode string) (map[string]string, error) {
	switch mode {
	case "default":
		return nil, nil
	case "install":
	default:
		return nil, fmt.Errorf("-bindings-argocd-params: %q is neither install nor default", mode)
	}
	// What the sidecar writes into argocd-cmd-params-cm (--argocd-settings=ensure).
	out := map[string]string{}
	for k, v := range argocdsettings.AppSetParams {
		out[k] = v
	}
	return out, nil
}
