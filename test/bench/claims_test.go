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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

var claims = flag.Int("claims", 1000, "DeploymentTargetClaims (and matching DeploymentTargets) for the binder benchmark, spread over -m namespaces")

const benchClass = "bench-static"

// BenchmarkClaims measures the binder (issue 14): -claims DeploymentTargets,
// then as many DeploymentTargetClaims of their class created as fast as 32
// clients can, each claim until it is Bound.
func BenchmarkClaims(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runClaims(b)
	}
}

func runClaims(b *testing.B) {
	ctx := context.Background()
	n, m := *claims, *spaces
	load := loadAvg()
	kube, c, namespaces := apiServer(ctx, b, stack.KubeOptions{Name: "bench-claims"}, m)
	defer kube.Stop()
	if err := c.Create(ctx, &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: benchClass},
		Spec: as.DeploymentTargetClassSpec{Provisioner: "bench.example.com/none", ReclaimPolicy: as.ReclaimPolicyRetain}}); err != nil {
		b.Fatal(err)
	}
	// The targets: i-th in namespace i%m, with the credentials Secret they name.
	fmt.Printf("bench: %d DeploymentTargets across %d namespaces\n", n, m)
	if err := parallel(32, n, func(i int) error {
		ns := namespaces[1+i%m]
		if i < m {
			if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "target-creds"},
				Type: corev1.SecretTypeOpaque, StringData: map[string]string{"kubeconfig": "unused"}}); err != nil {
				return err
			}
		}
		return c.Create(ctx, &as.DeploymentTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dt-%05d", i)},
			Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: benchClass, KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: ns, APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "target-creds"}},
		})
	}); err != nil {
		b.Fatal(err)
	}
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Args: strings.Fields(*sidecarArgs)})
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
		if avail == n {
			break
		}
		if time.Now().After(deadline) {
			fail("only %d of %d DeploymentTargets Available", avail, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	settle(b, side.MetricsURL)
	before, err := scrape(side.MetricsURL)
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
			if !ok || claim.Status.Phase != as.DeploymentTargetClaimPhaseBound {
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

	fmt.Printf("bench: %d DeploymentTargetClaims from 32 clients\n", n)
	meter := newCPUMeter(stackPids(kube, side.Pid()))
	var sent sync.Map
	start := time.Now()
	if err := parallel(32, n, func(i int) error {
		claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[1+i%m], Name: fmt.Sprintf("claim-%05d", i)},
			Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: benchClass}}
		t0 := time.Now()
		if err := c.Create(ctx, claim); err != nil {
			return err
		}
		sent.Store(claim.Namespace+"/"+claim.Name, t0)
		return nil
	}); err != nil {
		fail("create: %v", err)
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
	total := time.Since(start)
	cpu := meter.String()
	var lat []time.Duration
	mu.Lock()
	sent.Range(func(k, v any) bool {
		lat = append(lat, boundAt[k.(string)].Sub(v.(time.Time)))
		return true
	})
	mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	after := settle(b, side.MetricsURL)

	// The result itself: every claim names its own target, no target twice.
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

	delta := func(name, label string) float64 { return after.sum(name, label) - before.sum(name, label) }
	writes := sumMethods(after, writeMethodsRE) - sumMethods(before, writeMethodsRE)
	reads := sumMethods(after, "GET LIST") - sumMethods(before, "GET LIST")
	conflicts := delta("rest_client_requests_total", `code="409"`)
	reconciles := delta("controller_runtime_reconcile_total", `controller="deploymenttargetclaim"`)
	ms := func(d time.Duration) string { return d.Round(time.Millisecond / 10).String() }
	rows := [][3]string{
		{fmt.Sprintf("%d claims created from 32 clients, took", n), fmt.Sprintf("%s (%.0f/s)", createdIn.Round(10*time.Millisecond), float64(n)/createdIn.Seconds()), ""},
		{"all claims Bound after the first create", total.Round(10 * time.Millisecond).String(), ""},
		{"claim created -> Bound, p50", ms(pct(lat, 50)), ""},
		{"claim created -> Bound, p90", ms(pct(lat, 90)), ""},
		{"claim created -> Bound, p99", ms(pct(lat, 99)), ""},
		{"claim created -> Bound, max", ms(lat[len(lat)-1]), ""},
		{"API writes per claim (finalizer, claimRef, phases, targetName, annotation, Event)", fmt.Sprintf("%.2f", writes/float64(n)), ""},
		{"API reads per claim (uncached target lists and gets)", fmt.Sprintf("%.2f", reads/float64(n)), ""},
		{"conflicts (409) per claim", fmt.Sprintf("%.2f", conflicts/float64(n)), ""},
		{"reconciles per claim", fmt.Sprintf("%.2f", reconciles/float64(n)), ""},
		{"CPU used", cpu, ""},
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Binder: %d DeploymentTargetClaims -> Bound, %d matching DeploymentTargets across %d namespaces\n\n", n, n, m)
	fmt.Fprintf(&sb, "%s Sidecar flags: defaults %s.\n\n", machineLine(load), *sidecarArgs)
	sb.WriteString("| measure | value | target |\n|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&sb, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	fmt.Println()
	fmt.Print(sb.String())
	b.ReportMetric(float64(pct(lat, 50).Microseconds())/1000, "bound-p50-ms")
	b.ReportMetric(float64(pct(lat, 99).Microseconds())/1000, "bound-p99-ms")
	b.ReportMetric(total.Seconds(), "all-bound-s")
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		path := resultsPath(fmt.Sprintf("claims-N%d", n))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + path)
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
