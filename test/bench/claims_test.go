package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	claims        = flag.Int("claims", 1000, "DeploymentTargetClaims (and matching DeploymentTargets) per mode of the binder benchmark, spread over -m namespaces")
	claimsRate    = flag.Float64("claims-rate", 50, "claims created per second in the binder benchmark's steady mode (0: burst mode only)")
	claimsClients = flag.Int("claims-clients", 32, "clients creating the binder benchmark's burst at once (more: a faster arrival, as far as the API server takes it)")
)

const benchClass = "bench-static"

// BenchmarkClaims measures the binder (issues 14 and 27): 2 x -claims
// DeploymentTargets of two classes; then -claims claims of the first class
// arriving at -claims-rate per second (steady: p99 from each claim's
// creation to Bound), then as many of the second class created as fast as
// -claims-clients (32) can (burst: all Bound how long after the last create). Each
// mode reports the API server's work per claim: writes and uncached reads
// as the sidecar counts them, and writes by resource as the API server does.
func BenchmarkClaims(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runClaims(b)
	}
}

// claimsMode is one mode's figures.
type claimsMode struct {
	name                      string
	createdIn, all, afterLast time.Duration
	lat                       []time.Duration
	writes, reads, conflicts  float64
	reconciles                float64
	byResource                string
	cpu                       string
}

func runClaims(b *testing.B) {
	ctx := context.Background()
	n, m := *claims, *spaces
	load := loadAvg()
	kopts := stack.KubeOptions{Name: "bench-claims"}
	args, pprofURL := profiling(b, &kopts)
	kube, c, namespaces := apiServer(ctx, b, kopts, m)
	defer kube.Stop()
	modes := []string{"burst"}
	if *claimsRate > 0 {
		modes = []string{"steady", "burst"}
	}
	for _, mode := range modes {
		if err := c.Create(ctx, &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: benchClass + "-" + mode},
			Spec: as.DeploymentTargetClassSpec{Provisioner: "bench.example.com/none", ReclaimPolicy: as.ReclaimPolicyRetain}}); err != nil {
			b.Fatal(err)
		}
	}
	// The targets: i-th of each mode in namespace i%m, with the credentials Secret they name.
	fmt.Printf("bench: %d DeploymentTargets across %d namespaces\n", n*len(modes), m)
	if err := parallel(32, n*len(modes), func(i int) error {
		ns := namespaces[1+i%m]
		if i < m {
			if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "target-creds"},
				Type: corev1.SecretTypeOpaque, StringData: map[string]string{"kubeconfig": "unused"}}); err != nil {
				return err
			}
		}
		mode := modes[i/n]
		return c.Create(ctx, &as.DeploymentTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dt-%s-%05d", mode, i%n)},
			Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(benchClass + "-" + mode), KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: ns, APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "target-creds"}},
		})
	}); err != nil {
		b.Fatal(err)
	}
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Args: args})
	if err != nil {
		b.Fatal(err)
	}
	defer side.Close()
	fail := func(format string, args ...any) {
		side.WriteLogs(os.Stderr)
		b.Fatalf(format, args...)
	}
	// The reclaimer makes every free target Available first.
	deadline := time.Now().Add(*converged)
	for {
		var dts as.DeploymentTargetList
		if err := c.List(ctx, &dts); err != nil {
			b.Fatal(err)
		}
		avail := 0
		for _, dt := range dts.Items {
			if dt.Status.Phase == as.DeploymentTargetPhaseAvailable {
				avail++
			}
		}
		if avail == n*len(modes) {
			break
		}
		if time.Now().After(deadline) {
			fail("only %d of %d DeploymentTargets Available", avail, n*len(modes))
		}
		time.Sleep(200 * time.Millisecond)
	}
	apiHC, err := rest.HTTPClientFor(kube.Config)
	if err != nil {
		b.Fatal(err)
	}

	var results []claimsMode
	for _, mode := range modes {
		var prof *profiler
		if dir := profileDir(); dir != "" && mode == "burst" {
			// The creates and the binding after them (~10 s on 2 cores).
			prof = startProfiles(ctx, kube, pprofURL, dir, 10*time.Second)
			fmt.Printf("bench: profiling the sidecar and kube-apiserver through the burst into %s\n", dir)
		}
		results = append(results, claimsRun(ctx, b, kube, c, side, apiHC, namespaces, mode, fail))
		if prof != nil {
			if err := prof.wait(); err != nil {
				fmt.Printf("bench: profiles: %v\n", err)
			}
		}
	}
	checkClaims(ctx, b, c, fail)

	ms := func(d time.Duration) string { return d.Round(time.Millisecond / 10).String() }
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Binder: DeploymentTargetClaims -> Bound, %d per mode, as many matching DeploymentTargets across %d namespaces\n\n", n, m)
	fmt.Fprintf(&sb, "%s Sidecar flags: defaults %s.\n\n", machineLine(load), *sidecarArgs)
	sb.WriteString("| measure |")
	for _, r := range results {
		sb.WriteString(" " + r.name + " |")
	}
	sb.WriteString(" target |\n|---|")
	for range results {
		sb.WriteString("---|")
	}
	sb.WriteString("---|\n")
	row := func(measure, target string, f func(r claimsMode) string) {
		sb.WriteString("| " + measure + " |")
		for _, r := range results {
			sb.WriteString(" " + f(r) + " |")
		}
		sb.WriteString(" " + target + " |\n")
	}
	row(fmt.Sprintf("%d claims created, took", n), "", func(r claimsMode) string {
		return fmt.Sprintf("%s (%.0f/s)", r.createdIn.Round(10*time.Millisecond), float64(n)/r.createdIn.Seconds())
	})
	row("all claims Bound after the first create", "", func(r claimsMode) string { return r.all.Round(10 * time.Millisecond).String() })
	row("all claims Bound after the last create", "burst: <= 5 s", func(r claimsMode) string { return r.afterLast.Round(10 * time.Millisecond).String() })
	row("claim created -> Bound, p50", "", func(r claimsMode) string { return ms(pct(r.lat, 50)) })
	row("claim created -> Bound, p90", "", func(r claimsMode) string { return ms(pct(r.lat, 90)) })
	row("claim created -> Bound, p99", "steady: <= 1 s", func(r claimsMode) string { return ms(pct(r.lat, 99)) })
	row("claim created -> Bound, max", "", func(r claimsMode) string { return ms(r.lat[len(r.lat)-1]) })
	row("API writes per claim, the sidecar's (409s and Events included)", "<= 4", func(r claimsMode) string { return fmt.Sprintf("%.2f", r.writes) })
	row("of which conflicts (409)", "", func(r claimsMode) string { return fmt.Sprintf("%.2f", r.conflicts) })
	row("API writes per claim by resource, as the API server counted them (the bench's own create left out)", "", func(r claimsMode) string { return r.byResource })
	row("uncached API reads per claim (GET, LIST)", "0", func(r claimsMode) string { return fmt.Sprintf("%.2f", r.reads) })
	row("reconciles per claim", "", func(r claimsMode) string { return fmt.Sprintf("%.2f", r.reconciles) })
	row("CPU used", "", func(r claimsMode) string { return r.cpu })
	fmt.Println()
	fmt.Print(sb.String())
	for _, r := range results {
		b.ReportMetric(float64(pct(r.lat, 99).Microseconds())/1000, r.name+"-p99-ms")
		b.ReportMetric(r.afterLast.Seconds(), r.name+"-after-last-s")
		b.ReportMetric(r.writes, r.name+"-writes/claim")
	}
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		path := resultsPath(fmt.Sprintf("claims-N%d", n))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + path)
	}
}

// claimsRun creates -claims claims of mode's class, steadily at
// -claims-rate or in a burst from -claims-clients, and waits for all to be Bound.
func claimsRun(ctx context.Context, b *testing.B, kube *stack.Kube, c client.WithWatch, side *stack.Sidecar, apiHC *http.Client,
	namespaces []string, mode string, fail func(string, ...any)) claimsMode {
	n, m := *claims, *spaces
	settle(b, side)
	before, err := scrape(side)
	if err != nil {
		b.Fatal(err)
	}
	apiBefore, err := scrapeWith(apiHC, kube.URL+"/metrics")
	if err != nil {
		b.Fatal(err)
	}

	// Every claim's first Bound, from one watch started before any create.
	var none as.DeploymentTargetClaimList
	if err := c.List(ctx, &none); err != nil {
		b.Fatal(err)
	}
	w, err := toolswatch.NewRetryWatcher(none.ResourceVersion, &cache.ListWatch{
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &as.DeploymentTargetClaimList{}, &client.ListOptions{Raw: &o})
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	boundAt := map[string]time.Time{}
	var count atomic.Int64
	go func() {
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*as.DeploymentTargetClaim)
			if !ok || claim.Status.Phase != as.DeploymentTargetClaimPhaseBound || !strings.HasPrefix(claim.Name, mode+"-") {
				continue
			}
			now := time.Now()
			key := claim.Namespace + "/" + claim.Name
			mu.Lock()
			if _, seen := boundAt[key]; !seen {
				boundAt[key] = now
				count.Add(1)
			}
			mu.Unlock()
		}
	}()

	meter := newCPUMeter(stackPids(kube, side.Pid()))
	var sent sync.Map
	create := func(i int) error {
		claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[1+i%m], Name: fmt.Sprintf("%s-%05d", mode, i)},
			Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(benchClass + "-" + mode)}}
		t0 := time.Now()
		if err := c.Create(ctx, claim); err != nil {
			return err
		}
		sent.Store(claim.Namespace+"/"+claim.Name, t0)
		return nil
	}
	start := time.Now()
	if mode == "steady" {
		fmt.Printf("bench: %d DeploymentTargetClaims at %.0f/s\n", n, *claimsRate)
		// Each create at its own time, whatever the ones before took.
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i) / *claimsRate * float64(time.Second)))))
			wg.Add(1)
			go func() { defer wg.Done(); errs <- create(i) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				fail("create: %v", err)
			}
		}
	} else {
		fmt.Printf("bench: %d DeploymentTargetClaims from %d clients\n", n, *claimsClients)
		if err := parallel(*claimsClients, n, create); err != nil {
			fail("create: %v", err)
		}
	}
	createdIn := time.Since(start)
	for step := 1; count.Load() < int64(n); step++ {
		if time.Now().After(start.Add(*converged)) {
			fail("only %d of %d claims Bound after %s", count.Load(), n, *converged)
		}
		if step%100 == 0 {
			fmt.Printf("bench:   %d claims Bound (%s)\n", count.Load(), time.Since(start).Round(100*time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := claimsMode{name: mode, createdIn: createdIn, cpu: meter.String()}
	var lastCreate, lastBound time.Time
	mu.Lock()
	sent.Range(func(k, v any) bool {
		t0, t1 := v.(time.Time), boundAt[k.(string)]
		r.lat = append(r.lat, t1.Sub(t0))
		if t0.After(lastCreate) {
			lastCreate = t0
		}
		if t1.After(lastBound) {
			lastBound = t1
		}
		return true
	})
	mu.Unlock()
	r.all, r.afterLast = lastBound.Sub(start), lastBound.Sub(lastCreate)
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	after := settle(b, side)
	apiAfter, err := scrapeWith(apiHC, kube.URL+"/metrics")
	if err != nil {
		b.Fatal(err)
	}
	delta := func(name, label string) float64 { return after.sum(name, label) - before.sum(name, label) }
	r.writes = (sumMethods(after, writeMethodsRE) - sumMethods(before, writeMethodsRE)) / float64(n)
	r.reads = (sumMethods(after, "GET LIST") - sumMethods(before, "GET LIST")) / float64(n)
	r.conflicts = delta("rest_client_requests_total", `code="409"`) / float64(n)
	r.reconciles = delta("controller_runtime_reconcile_total", `controller="deploymenttargetclaim"`) / float64(n)
	r.byResource = writesByResource(apiBefore, apiAfter, n)
	return r
}

// apiRequestRE picks resource, subresource and verb out of an
// apiserver_request_total series (labels sorted by name).
var apiRequestRE = regexp.MustCompile(`^apiserver_request_total\{code="(\d+)",.*,resource="([^"]*)",scope="[^"]*",subresource="([^"]*)",verb="([A-Z]+)",`)

// writesByResource is every client's writes per claim between two scrapes
// of the API server, by verb and resource, the bench's own claim creates
// left out; conflicts (409) counted apart.
func writesByResource(before, after metrics, n int) string {
	counts := map[string]float64{}
	for k, v := range after {
		f := apiRequestRE.FindStringSubmatch(k)
		if f == nil || !strings.Contains(" POST PUT PATCH DELETE APPLY ", " "+f[4]+" ") {
			continue
		}
		name := f[4] + " " + f[2]
		if f[3] != "" {
			name += "/" + f[3]
		}
		if f[1] == "409" {
			name += " (409)"
		}
		counts[name] += v - before[k]
	}
	counts["POST deploymenttargetclaims"] -= float64(n)
	var parts []string
	for name, v := range counts {
		if v/float64(n) >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", name, v/float64(n)))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// checkClaims checks the result itself: every claim names its own target,
// no target twice.
func checkClaims(ctx context.Context, b *testing.B, c client.Client, fail func(string, ...any)) {
	var dts as.DeploymentTargetList
	if err := c.List(ctx, &dts); err != nil {
		b.Fatal(err)
	}
	var list as.DeploymentTargetClaimList
	if err := c.List(ctx, &list); err != nil {
		b.Fatal(err)
	}
	claimOf := map[string]string{}
	for _, dt := range dts.Items {
		if dt.Spec.ClaimRef != "" {
			claimOf[dt.Namespace+"/"+dt.Name] = dt.Spec.ClaimRef
		}
	}
	seen := map[string]bool{}
	for _, cl := range list.Items {
		key := cl.Namespace + "/" + cl.Spec.TargetName
		if cl.Status.Phase != as.DeploymentTargetClaimPhaseBound || claimOf[key] != cl.Name || seen[key] {
			fail("claim %s/%s: phase %s, target %s (claimRef %q, seen twice: %v)", cl.Namespace, cl.Name, cl.Status.Phase, cl.Spec.TargetName, claimOf[key], seen[key])
		}
		seen[key] = true
	}
}

// parallel runs f(0..n-1) on workers goroutines; the first error stops it.
func parallel(workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
