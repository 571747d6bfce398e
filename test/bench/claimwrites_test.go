package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

var writeRounds = flag.Int("write-rounds", 3, "rounds of every write shape in the ClaimWrites benchmark (interleaved, so a change of the machine's load hits all alike)")

// BenchmarkClaimWrites (issue 38 item 2) measures what one write of the
// binder's costs the API server by its shape, on -claims DeploymentTargets
// as the binder leaves them (spec, annotations, a status with two
// conditions, three field managers): the same change (a target's claimRef
// and bound-by-controller annotation, locked by resourceVersion; a status
// phase and condition) written as a PUT of the whole object, a JSON merge
// patch, and a JSON patch, from 32 clients. It reports the API server's and
// etcd's CPU per 1,000 writes, taken from /proc, so the machine's load
// lengthens the wall time but hardly the CPU.
func BenchmarkClaimWrites(b *testing.B) {
	requireStack(b)
	for i := 0; i < b.N; i++ {
		runClaimWrites(b)
	}
}

// writeShape writes change number round to dt in one request.
type writeShape struct {
	name  string
	write func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error
}

func runClaimWrites(b *testing.B) {
	ctx := context.Background()
	n, m := *claims, 10
	load := loadAvg()
	kube, c, namespaces := apiServer(ctx, b, stack.KubeOptions{Name: "bench-claimwrites"}, m)
	defer kube.Stop()
	dts := make([]*as.DeploymentTarget, n)
	fmt.Printf("bench: %d DeploymentTargets across %d namespaces\n", n, m)
	if err := parallel(32, n, func(i int) error {
		ns := namespaces[1+i%m]
		dt := &as.DeploymentTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dt-%05d", i)},
			Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: benchClass, KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: ns, APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "target-creds"}},
		}
		if err := c.Create(ctx, dt); err != nil {
			return err
		}
		// As the reclaimer leaves a free target, written by another manager.
		dt.Status.Phase = as.DeploymentTargetPhaseAvailable
		now := metav1.Now()
		dt.Status.Conditions = []metav1.Condition{
			{Type: as.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionFalse, Reason: as.DeploymentTargetReasonSuccess,
				Message: "available for a claim", LastTransitionTime: now, ObservedGeneration: dt.Generation},
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available", Message: "available for a claim", LastTransitionTime: now, ObservedGeneration: dt.Generation},
		}
		if err := c.Status().Update(ctx, dt, client.FieldOwner("reclaimer")); err != nil {
			return err
		}
		dts[i] = dt
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	owner := client.FieldOwner("binder")
	spec := func(dt *as.DeploymentTarget, round int) {
		dt.Spec.ClaimRef = fmt.Sprintf("claim-%d", round)
		metav1.SetMetaDataAnnotation(&dt.ObjectMeta, as.AnnBoundByController, fmt.Sprint(round%2 == 0))
	}
	status := func(dt *as.DeploymentTarget, round int) {
		dt.Status.Phase = []as.DeploymentTargetPhase{as.DeploymentTargetPhaseBound, as.DeploymentTargetPhaseAvailable}[round%2]
		dt.Status.Conditions[0].Message = fmt.Sprintf("bound to claim claim-%d", round)
		dt.Status.Conditions[0].LastTransitionTime = metav1.Now()
	}
	shapes := []writeShape{
		{"spec: PUT of the whole object", func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error {
			spec(dt, round)
			return c.Update(ctx, dt, owner)
		}},
		{"spec: JSON merge patch of the change, resourceVersion in it", func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error {
			patch := client.MergeFromWithOptions(dt.DeepCopy(), client.MergeFromWithOptimisticLock{})
			spec(dt, round)
			return c.Patch(ctx, dt, patch, owner)
		}},
		{"spec: JSON patch of the change, test of resourceVersion first", func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error {
			rv := dt.ResourceVersion
			spec(dt, round)
			ops := []map[string]any{
				{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
				{"op": "add", "path": "/spec/claimRef", "value": dt.Spec.ClaimRef},
				{"op": "add", "path": "/metadata/annotations", "value": dt.Annotations},
			}
			raw, err := json.Marshal(ops)
			if err != nil {
				return err
			}
			return c.Patch(ctx, dt, client.RawPatch(types.JSONPatchType, raw), owner)
		}},
		{"status: PUT of the whole object", func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error {
			status(dt, round)
			return c.Status().Update(ctx, dt, owner)
		}},
		{"status: JSON merge patch of the change, resourceVersion in it", func(ctx context.Context, c client.Client, dt *as.DeploymentTarget, round int) error {
			patch := client.MergeFromWithOptions(dt.DeepCopy(), client.MergeFromWithOptimisticLock{})
			status(dt, round)
			return c.Status().Patch(ctx, dt, patch, owner)
		}},
	}
	pids := stackPids(kube, 0)
	cpu := func() (api, etcd time.Duration) { return cpuTime(pids["kube-apiserver"]), cpuTime(pids["etcd"]) }
	type total struct{ api, etcd, wall time.Duration }
	totals := make([]total, len(shapes))
	round := 0
	for r := 0; r < *writeRounds; r++ {
		for s, shape := range shapes {
			round++
			time.Sleep(time.Second) // the previous shape's watch events delivered
			api0, etcd0 := cpu()
			t0 := time.Now()
			if err := parallel(32, n, func(i int) error { return shape.write(ctx, c, dts[i], round) }); err != nil {
				b.Fatalf("%s: %v", shape.name, err)
			}
			wall := time.Since(t0)
			api1, etcd1 := cpu()
			totals[s].api += api1 - api0
			totals[s].etcd += etcd1 - etcd0
			totals[s].wall += wall
			fmt.Printf("bench:   round %d, %s: API server %.2f CPU-s, etcd %.2f CPU-s, %s\n", r+1, shape.name,
				(api1 - api0).Seconds(), (etcd1 - etcd0).Seconds(), wall.Round(time.Millisecond))
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "### One binder write by its shape: %d DeploymentTargets, %d rounds of %d writes per shape from 32 clients\n\n", n, *writeRounds, n)
	fmt.Fprintf(&sb, "%s\n\n", machineLine(load))
	sb.WriteString("| write shape | API server CPU per 1,000 writes | etcd CPU per 1,000 writes | wall per 1,000 writes |\n|---|---|---|---|\n")
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.2f s", d.Seconds()*1000/float64(n**writeRounds))
	}
	for s, shape := range shapes {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", shape.name, per(totals[s].api), per(totals[s].etcd), per(totals[s].wall))
		b.ReportMetric(totals[s].api.Seconds()*1000/float64(n**writeRounds), fmt.Sprintf("shape%d-api-cpu-s/1000", s))
	}
	fmt.Println()
	fmt.Print(sb.String())
	if os.Getenv("BENCH_WRITE_RESULTS") == "1" {
		path := resultsPath(fmt.Sprintf("claimwrites-N%d", n))
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Println("bench: wrote test/bench/" + path)
	}
}
