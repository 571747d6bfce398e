// Package chaos runs the sidecar process behind a fault-injecting proxy to the
// real kube-apiserver, SIGKILLs it at random, and checks that what it wrote is
// exactly right: one Application per GitOpsDeployment, no orphans, foreign
// look-alike objects untouched, status converged, and no exit of its own.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

const argoNS = "argocd"

var (
	kube *stack.Kube
	k8s  client.Client
	// n is the number of GitOpsDeployments per round; make chaos raises it.
	n = flag.Int("chaos-n", 24, "GitOpsDeployments per chaos round")
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if _, err := stack.Binaries(); err != nil {
		if stack.Required() {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "SKIP: chaos tests need the real test stack:", err)
		return 0
	}
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "chaos setup:", err); return 1 }
	var err error
	// The garbage collector ends the foreground deletion of a binding's
	// ApplicationSet, as on any cluster.
	if kube, err = stack.StartKube(ctx, stack.KubeOptions{Name: "chaos", ControllerManager: true}); err != nil {
		return fail(err)
	}
	defer kube.Stop()
	root, err := stack.RepoRoot()
	if err != nil {
		return fail(err)
	}
	argoMod, err := stack.ArgoCDModuleDir()
	if err != nil {
		return fail(err)
	}
	if err := kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(root, "manifests", "crd")); err != nil {
		return fail(err)
	}
	if k8s, err = client.New(kube.Config, client.Options{Scheme: sidecar.NewScheme()}); err != nil {
		return fail(err)
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}); err != nil {
		return fail(err)
	}
	code := m.Run()
	if code != 0 {
		kube.WriteLogs(os.Stderr)
	}
	return code
}

// Issue 13 defect 5: one failed discovery call at start-up ended the sidecar.
// With every request failing it stays up and not ready; once the API server
// answers again it becomes ready and works, while a share of requests still
// fails and watches are cut.
func TestSidecarRidesOutAPIErrors(t *testing.T) {
	proxy, err := stack.StartFaultProxy(kube, t.TempDir())
	require.NoError(t, err)
	defer proxy.Close()
	_, err = stack.BuildSidecar() // before the clock starts: a build takes a while
	require.NoError(t, err)
	proxy.SetFailRate(1)
	started := make(chan error, 1)
	var side *stack.Sidecar
	go func() {
		var err error
		side, err = stack.StartSidecar(context.Background(), kube, stack.SidecarOptions{Kubeconfig: proxy.Kubeconfig})
		started <- err
	}()
	select {
	case err := <-started:
		t.Fatalf("the sidecar became ready or exited while every API request failed: %v", err)
	case <-time.After(8 * time.Second):
	}
	require.Greater(t, proxy.Failed.Load(), int64(0), "the proxy failed nothing: the test proves nothing")
	proxy.SetFailRate(0.2)
	proxy.CutWatchesWithin(3 * time.Second)
	require.NoError(t, <-started, "the sidecar did not recover once the API server answered")
	defer side.Close()

	ns := tenantNamespace(t)
	var gds []*v1.GitOpsDeployment
	for i := 0; i < 8; i++ {
		gds = append(gds, createDeployment(t, ns, fmt.Sprintf("app-%d", i)))
	}
	// A full outage at run time.
	proxy.SetFailRate(1)
	time.Sleep(5 * time.Second)
	require.False(t, side.Exited(), "the sidecar exited during an API outage:\n%s", logTail(side))
	proxy.SetFailRate(0.2)
	waitConverged(t, gds, 90*time.Second)
	require.False(t, side.Exited(), "the sidecar exited by itself:\n%s", logTail(side))
	t.Logf("faults injected: %d failed requests, %d watches cut", proxy.Failed.Load(), proxy.Cut.Load())
}

// The chaos round: GitOpsDeployments created, changed and deleted while the
// sidecar is SIGKILLed at random and the proxy fails 20% of requests and cuts
// watches; look-alike Applications planted in the Argo CD namespace.
func TestChaosRound(t *testing.T) {
	proxy, err := stack.StartFaultProxy(kube, t.TempDir())
	require.NoError(t, err)
	defer proxy.Close()
	side, err := stack.StartSidecar(context.Background(), kube, stack.SidecarOptions{Kubeconfig: proxy.Kubeconfig})
	require.NoError(t, err)
	defer side.Close()
	proxy.SetFailRate(0.2)
	proxy.CutWatchesWithin(4 * time.Second)

	ns := tenantNamespace(t)
	lookAlikes := plantLookAlikes(t, ns)

	stop := make(chan struct{})
	killed := make(chan int, 1)
	go killAtRandom(side, stop, killed)

	var gds []*v1.GitOpsDeployment
	for i := 0; i < *n; i++ {
		gds = append(gds, createDeployment(t, ns, fmt.Sprintf("app-%d", i)))
		time.Sleep(50 * time.Millisecond)
	}
	// Change a third, delete a third.
	var kept []*v1.GitOpsDeployment
	for i, gd := range gds {
		switch i % 3 {
		case 0:
			patch := client.MergeFrom(gd.DeepCopy())
			gd.Spec.Source.Path = "changed"
			require.NoError(t, k8s.Patch(context.Background(), gd, patch))
			kept = append(kept, gd)
		case 1:
			require.NoError(t, k8s.Delete(context.Background(), gd))
		default:
			kept = append(kept, gd)
		}
	}
	// Kills go on while the sidecar works through all that (a kill every 2-6 s).
	killsFor(12 * time.Second)
	close(stop)
	kills := <-killed
	if side.Exited() {
		require.NoError(t, side.Start(context.Background()))
	}
	// The faults go on while it converges: only the kills stop.
	waitConverged(t, kept, 120*time.Second)
	for _, gd := range kept {
		app := &argov1alpha1.Application{}
		require.NoError(t, k8s.Get(context.Background(), appKey(gd), app))
		assert.Equal(t, gd.Spec.Source.Path, app.Spec.Source.Path, "the spec of %s did not reach its Application", gd.Name)
	}
	// Exactly one Application per remaining deployment, none of a deleted one,
	// and no orphan: every Application of ours for the tenant has a live owner.
	live := map[string]bool{}
	for _, gd := range kept {
		live[string(gd.UID)] = true
	}
	foreign := map[string]bool{}
	for _, la := range lookAlikes {
		foreign[la.Name] = true
	}
	var apps argov1alpha1.ApplicationList
	owners := map[string]int{}
	require.Eventually(t, func() bool {
		require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		owners = map[string]int{}
		orphans := 0
		for _, a := range apps.Items {
			if foreign[a.Name] {
				continue
			}
			uid := a.Labels[ownership.LabelOwnerUID]
			owners[uid]++
			if !live[uid] {
				orphans++
			}
		}
		return orphans == 0 && len(owners) == len(kept)
	}, 60*time.Second, 200*time.Millisecond, "orphan Applications, or deployments without one")
	for _, gd := range kept {
		assert.Equal(t, 1, owners[string(gd.UID)], "Applications of %s", gd.Name)
	}
	// Foreign look-alikes untouched.
	for _, la := range lookAlikes {
		after := &argov1alpha1.Application{}
		require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(la), after), "a look-alike Application was deleted")
		assert.Equal(t, la.ResourceVersion, after.ResourceVersion, "look-alike %s was written to", la.Name)
	}
	assert.GreaterOrEqual(t, kills, 2, "too few SIGKILLs: the test proves little")
	t.Logf("%d deployments, %d SIGKILLs, %d failed requests, %d watches cut", *n, kills, proxy.Failed.Load(), proxy.Cut.Load())
}

func tenantNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-"}}
	require.NoError(t, k8s.Create(context.Background(), ns))
	return ns.Name
}

func createDeployment(t *testing.T, ns, name string) *v1.GitOpsDeployment {
	t.Helper()
	gd := &v1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.GitOpsDeploymentSpec{
			Source: v1.ApplicationSource{RepoURL: "https://git.example.com/chaos/apps.git", Path: "apps"},
			Type:   v1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	require.NoError(t, k8s.Create(context.Background(), gd))
	return gd
}

func appKey(gd *v1.GitOpsDeployment) client.ObjectKey {
	return client.ObjectKey{Namespace: argoNS, Name: argocd.ApplicationName(string(gd.UID))}
}

// plantLookAlikes makes Applications that look like ours (our managed-by and
// tenant labels; one with an owner UID of nobody, one without) but are not.
func plantLookAlikes(t *testing.T, ns string) []*argov1alpha1.Application {
	t.Helper()
	var out []*argov1alpha1.Application
	for i, labels := range []map[string]string{
		{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns},
		{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns, ownership.LabelOwnerKind: ownership.KindGitOpsDeployment, ownership.LabelOwnerUID: "nobody"},
	} {
		a := &argov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: fmt.Sprintf("look-alike-%s-%d", ns, i), Labels: labels},
			Spec: argov1alpha1.ApplicationSpec{
				Project:     "default",
				Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/other.git", Path: "."},
				Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: ns},
			},
		}
		require.NoError(t, k8s.Create(context.Background(), a))
		out = append(out, a)
	}
	return out
}

// waitConverged waits until every deployment has its Application and a status
// written for its current generation without an error.
func waitConverged(t *testing.T, gds []*v1.GitOpsDeployment, within time.Duration) {
	t.Helper()
	for _, gd := range gds {
		require.Eventually(t, func() bool {
			got := &v1.GitOpsDeployment{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(gd), got); err != nil {
				return false
			}
			if got.Status.ObservedGeneration != got.Generation {
				return false
			}
			return k8s.Get(context.Background(), appKey(gd), &argov1alpha1.Application{}) == nil
		}, within, 250*time.Millisecond, "GitOpsDeployment %s never converged", gd.Name)
	}
}

func logTail(s *stack.Sidecar) string {
	var b = &tail{}
	s.WriteLogs(b)
	return string(*b)
}

type tail []byte

func (t *tail) Write(p []byte) (int, error) { *t = append(*t, p...); return len(p), nil }

// Two replicas with leader election: the leader is SIGKILLed in the middle of
// a burst and the other takes over within the lease time; every deployment
// ends with exactly one Application.
func TestLeaderKilledMidBurst(t *testing.T) {
	args := []string{"--leader-elect=true", "--leader-election-namespace=" + argoNS}
	leader, err := stack.StartSidecar(context.Background(), kube, stack.SidecarOptions{Args: args})
	require.NoError(t, err)
	defer leader.Close()
	// The first replica holds the lease before the second starts.
	require.Eventually(t, func() bool {
		var lease coordinationv1.Lease
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: argoNS, Name: "gitops-service.managed-gitops.redhat.com"}, &lease) == nil &&
			lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	}, 30*time.Second, 200*time.Millisecond, "the first replica never took the lease")
	follower, err := stack.StartSidecar(context.Background(), kube, stack.SidecarOptions{Args: args})
	require.NoError(t, err)
	defer follower.Close()

	ns := tenantNamespace(t)
	var gds []*v1.GitOpsDeployment
	for i := 0; i < *n; i++ {
		gds = append(gds, createDeployment(t, ns, fmt.Sprintf("app-%d", i)))
		if i == *n/2 {
			leader.Kill()
		}
	}
	killedAt := time.Now()
	// Lease 15 s (controller-runtime's default) plus the time to reconcile.
	waitConverged(t, gds, 60*time.Second)
	t.Logf("%d deployments converged %s after the leader was killed", len(gds), time.Since(killedAt).Round(time.Second))
	require.False(t, follower.Exited(), "the follower exited")
	var apps argov1alpha1.ApplicationList
	require.NoError(t, k8s.List(context.Background(), &apps, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
	owners := map[string]int{}
	for _, a := range apps.Items {
		owners[a.Labels[ownership.LabelOwnerUID]]++
	}
	assert.Len(t, apps.Items, len(gds), "Applications of the tenant")
	for _, gd := range gds {
		assert.Equal(t, 1, owners[string(gd.UID)], "Applications of %s", gd.Name)
	}
}
