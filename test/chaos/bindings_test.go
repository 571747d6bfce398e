package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The chaos round of the App Studio API: SnapshotEnvironmentBindings and
// PromotionRuns created, changed and deleted while the sidecar is SIGKILLed at
// random and the proxy fails 20% of requests and cuts watches, with
// look-alike ApplicationSets planted. No Argo CD runs here: playArgoCD does
// the applicationset-controller's part (it asks our generator, as Argo CD
// would, and reports the Applications Synced and Healthy). At the end: exactly
// one ApplicationSet per binding, one binding per Application and
// Environment, no orphan, look-alikes untouched, every binding's status
// converged and every PromotionRun Succeeded.
func TestChaosBindingsAndPromotions(t *testing.T) {
	ctx := context.Background()
	proxy, err := stack.StartFaultProxy(kube, t.TempDir())
	require.NoError(t, err)
	defer proxy.Close()
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Kubeconfig: proxy.Kubeconfig})
	require.NoError(t, err)
	defer side.Close()
	proxy.SetFailRate(0.2)
	proxy.CutWatchesWithin(4 * time.Second)

	ns := tenantNamespace(t)
	lookAlikes := plantLookAlikeSets(t, ns)
	stopArgo := playArgoCD(t, ns)
	defer stopArgo()

	// Applications app-i, each with one Component, Snapshots s1 and s2;
	// Environments dev and stage, both the tenant's own namespace.
	apps := max(*n/2, 4)
	for _, env := range []string{"dev", "stage"} {
		require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: env},
			Spec: as.EnvironmentSpec{DisplayName: env, DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}))
	}
	for i := 0; i < apps; i++ {
		createAppStudioApplication(t, ns, fmt.Sprintf("app-%d", i))
	}

	stop := make(chan struct{})
	killed := make(chan int, 1)
	go killAtRandom(side, stop, killed)

	// Bindings to dev, then a third moved to s2 and a third deleted.
	var bindings []*as.SnapshotEnvironmentBinding
	for i := 0; i < apps; i++ {
		app := fmt.Sprintf("app-%d", i)
		seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-dev"},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: app, Environment: "dev", Snapshot: app + "-s1"}}
		require.NoError(t, k8s.Create(ctx, seb))
		bindings = append(bindings, seb)
		time.Sleep(50 * time.Millisecond)
	}
	// PromotionRuns of s2 to stage, where no binding exists yet: each creates one.
	var runs []*as.PromotionRun
	for i := 0; i < apps; i++ {
		app := fmt.Sprintf("app-%d", i)
		run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-to-stage"},
			Spec: as.PromotionRunSpec{Application: app, Snapshot: app + "-s2", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "stage"}}}
		require.NoError(t, k8s.Create(ctx, run))
		runs = append(runs, run)
		time.Sleep(50 * time.Millisecond)
	}
	var kept []*as.SnapshotEnvironmentBinding
	var deleted []*as.SnapshotEnvironmentBinding
	for i, seb := range bindings {
		switch i % 3 {
		case 0:
			require.NoError(t, retryOnConflict(func() error {
				if err := k8s.Get(ctx, client.ObjectKeyFromObject(seb), seb); err != nil {
					return err
				}
				seb.Spec.Snapshot = seb.Spec.Application + "-s2"
				return k8s.Update(ctx, seb)
			}))
			kept = append(kept, seb)
		case 1:
			require.NoError(t, k8s.Delete(ctx, seb))
			deleted = append(deleted, seb)
		default:
			kept = append(kept, seb)
		}
	}
	// A third of the PromotionRuns are deleted while they run.
	var keptRuns []*as.PromotionRun
	for i, run := range runs {
		if i%3 == 1 {
			require.NoError(t, k8s.Delete(ctx, run))
			continue
		}
		keptRuns = append(keptRuns, run)
	}
	// Kills go on while the sidecar works through all that (a kill every 2-6 s).
	time.Sleep(15 * time.Second)
	close(stop)
	kills := <-killed
	if side.Exited() {
		require.NoError(t, side.Start(ctx))
	}

	// The faults go on while it converges: only the kills stop.
	for _, run := range keptRuns {
		require.Eventually(t, func() bool {
			got := &as.PromotionRun{}
			return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && got.Status.State == as.PromotionRunStateCompleted
		}, 150*time.Second, 250*time.Millisecond, "PromotionRun %s never completed", run.Name)
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(run), run))
		assert.Equal(t, as.PromotionRunCompleteResultSuccess, run.Status.CompletionResult, "PromotionRun %s: %+v", run.Name, run.Status.Conditions)
	}
	// Every binding there is (the kept ones and those the runs made) converges.
	var all as.SnapshotEnvironmentBindingList
	var behind []string
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		require.NoError(t, k8s.List(ctx, &all, client.InNamespace(ns)))
		behind = nil
		for _, seb := range all.Items {
			c := meta.FindStatusCondition(seb.Status.ComponentDeploymentConditions, as.ComponentDeploymentConditionAllComponentsDeployed)
			if !seb.DeletionTimestamp.IsZero() || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != seb.Generation {
				behind = append(behind, fmt.Sprintf("%s (generation %d, deleting %v): %+v %+v", seb.Name, seb.Generation, !seb.DeletionTimestamp.IsZero(),
					seb.Status.ComponentDeploymentConditions, seb.Status.BindingConditions))
			}
		}
		if len(behind) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "bindings did not converge:\n%s", strings.Join(behind, "\n"))
	}
	// One binding per Application and Environment: the kept dev ones, one
	// stage binding per promoted application, none of a deleted binding.
	pairs := map[string]string{}
	for _, seb := range all.Items {
		pair := seb.Spec.Application + "/" + seb.Spec.Environment
		assert.Empty(t, pairs[pair], "two bindings for %s: %s and %s", pair, pairs[pair], seb.Name)
		pairs[pair] = seb.Name
	}
	for _, seb := range kept {
		assert.Contains(t, pairs, seb.Spec.Application+"/dev")
	}
	for _, seb := range deleted {
		assert.NotContains(t, pairs, seb.Spec.Application+"/dev", "deleted binding %s is still there", seb.Name)
	}
	for _, run := range keptRuns {
		name, ok := pairs[run.Spec.Application+"/stage"]
		if assert.True(t, ok, "no stage binding for %s", run.Name) {
			seb := &as.SnapshotEnvironmentBinding{}
			require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, seb))
			assert.Equal(t, run.Spec.Snapshot, seb.Spec.Snapshot, "binding %s", name)
		}
	}
	// Exactly one ApplicationSet per binding, and no orphan.
	live := map[string]string{}
	for _, seb := range all.Items {
		live[string(seb.UID)] = seb.Name
	}
	foreign := map[string]bool{}
	for _, la := range lookAlikes {
		foreign[la.Name] = true
	}
	require.Eventually(t, func() bool {
		var sets argov1alpha1.ApplicationSetList
		require.NoError(t, k8s.List(ctx, &sets, client.InNamespace(argoNS), client.MatchingLabels{ownership.LabelTenantNS: ns}))
		owners := map[string]int{}
		for _, s := range sets.Items {
			if !foreign[s.Name] {
				owners[s.Labels[ownership.LabelOwnerUID]]++
			}
		}
		for uid, count := range owners {
			if live[uid] == "" || count != 1 {
				return false // an orphan, or a duplicate
			}
		}
		return len(owners) == len(live)
	}, 60*time.Second, 250*time.Millisecond, "ApplicationSets are not exactly one per binding")
	// Foreign look-alikes untouched.
	for _, la := range lookAlikes {
		after := &argov1alpha1.ApplicationSet{}
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(la), after), "a look-alike ApplicationSet was deleted")
		assert.Equal(t, la.ResourceVersion, after.ResourceVersion, "look-alike %s was written to", la.Name)
	}
	assert.GreaterOrEqual(t, kills, 2, "too few SIGKILLs: the test proves little")
	t.Logf("%d applications: %d bindings kept, %d deleted, %d PromotionRuns completed, %d deleted; %d SIGKILLs, %d failed requests, %d watches cut",
		apps, len(kept), len(deleted), len(keptRuns), len(runs)-len(keptRuns), kills, proxy.Failed.Load(), proxy.Cut.Load())
}

// killAtRandom SIGKILLs the sidecar every 2-6 s and starts it again, until
// stop; it sends the number of kills.
func killAtRandom(side *stack.Sidecar, stop chan struct{}, killed chan<- int) {
	kills := 0
	defer func() { killed <- kills }()
	for {
		sofar.Store(int32(kills))
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(2000+rand.IntN(4000)) * time.Millisecond):
		}
		side.Kill()
		kills++
		// Start waits for ready, behind the faulty proxy.
		for side.Start(context.Background()) != nil {
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}

// sofar is how many SIGKILLs killAtRandom has sent (one runs at a time).
var sofar atomic.Int32

// killsFor lets killAtRandom kill for at least d, and on (up to a minute)
// until it killed at least twice: a restart behind the faulty proxy can
// take most of d on a loaded machine, and a round with one kill proves little.
func killsFor(d time.Duration) {
	time.Sleep(d)
	for deadline := time.Now().Add(time.Minute); sofar.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
}

func retryOnConflict(f func() error) error {
	for {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// createAppStudioApplication makes Application app with Component <app>-web
// (its GitOps repository in its status) and Snapshots <app>-s1 and <app>-s2.
func createAppStudioApplication(t *testing.T, ns, app string) {
	t.Helper()
	ctx := context.Background()
	om := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: om(app), Spec: as.ApplicationSpec{DisplayName: app}}))
	comp := &as.Component{ObjectMeta: om(app + "-web"), Spec: as.ComponentSpec{ComponentName: "web", Application: app, ContainerImage: "quay.io/chaos/" + app + ":0"}}
	require.NoError(t, k8s.Create(ctx, comp))
	comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: "https://git.example.com/chaos/gitops.git", Branch: "main", Context: "components/" + app}
	require.NoError(t, k8s.Status().Update(ctx, comp))
	for _, s := range []string{"s1", "s2"} {
		require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: om(app + "-" + s), Spec: as.SnapshotSpec{Application: app,
			Components: []as.SnapshotComponent{{Name: app + "-web", ContainerImage: "quay.io/chaos/" + app + ":" + s}}}}))
	}
}

// plantLookAlikeSets makes ApplicationSets that look like ours for the tenant
// (our labels; one naming a binding UID of nobody) but are not.
func plantLookAlikeSets(t *testing.T, ns string) []*argov1alpha1.ApplicationSet {
	t.Helper()
	var out []*argov1alpha1.ApplicationSet
	for i, labels := range []map[string]string{
		{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns},
		{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: ns, ownership.LabelOwnerKind: ownership.KindBinding, ownership.LabelOwnerUID: "nobody"},
	} {
		set := &argov1alpha1.ApplicationSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: fmt.Sprintf("look-alike-set-%s-%d", ns, i), Labels: labels},
			Spec: argov1alpha1.ApplicationSetSpec{
				Generators: []argov1alpha1.ApplicationSetGenerator{{List: &argov1alpha1.ListGenerator{}}},
				Template: argov1alpha1.ApplicationSetTemplate{
					ApplicationSetTemplateMeta: argov1alpha1.ApplicationSetTemplateMeta{Name: "x"},
					Spec: argov1alpha1.ApplicationSpec{Project: "default",
						Destination: argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: ns}},
				},
			},
		}
		require.NoError(t, k8s.Create(context.Background(), set))
		out = append(out, set)
	}
	return out
}

// playArgoCD does the applicationset-controller's part for the tenant's
// ApplicationSets, straight on the API server (not through the faulty proxy):
// it asks our generator for the parameters, as Argo CD does, writes the
// Applications they make and reports them Synced and Healthy, running the
// Snapshot's image; Applications of a set that is gone go too (Argo CD's
// owner reference). It stops when the returned func is called.
func playArgoCD(t *testing.T, ns string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := generateApplications(ctx, ns); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
				t.Logf("playing Argo CD: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

func generateApplications(ctx context.Context, ns string) error {
	tenant := client.MatchingLabels{ownership.LabelTenantNS: ns, ownership.LabelOwnerKind: ownership.KindBinding}
	var sets argov1alpha1.ApplicationSetList
	if err := k8s.List(ctx, &sets, client.InNamespace(argoNS), tenant); err != nil {
		return err
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := k8s.List(ctx, &sebs, client.InNamespace(ns)); err != nil {
		return err
	}
	byUID := map[string]*as.SnapshotEnvironmentBinding{}
	for i := range sebs.Items {
		byUID[string(sebs.Items[i].UID)] = &sebs.Items[i]
	}
	want := map[string]bool{}
	for _, set := range sets.Items {
		seb := byUID[set.Labels[ownership.LabelOwnerUID]]
		if seb == nil || set.Name != argocd.ApplicationSetName(string(seb.UID)) {
			continue // a look-alike, or a set whose binding is gone: it generates nothing
		}
		in, err := binding.Resolve(ctx, k8s, k8s, argoNS, seb)
		var refused *kernel.Refusal
		if errors.As(err, &refused) {
			continue
		}
		if err != nil {
			return err
		}
		params, err := binding.Params(in)
		if errors.As(err, &refused) {
			continue
		}
		if err != nil {
			return err
		}
		for _, p := range params {
			want[p.Name] = true
			if err := writeApplication(ctx, &set, p); err != nil {
				return err
			}
		}
	}
	var apps argov1alpha1.ApplicationList
	if err := k8s.List(ctx, &apps, client.InNamespace(argoNS), tenant); err != nil {
		return err
	}
	for i := range apps.Items {
		if !want[apps.Items[i].Name] {
			if err := client.IgnoreNotFound(k8s.Delete(ctx, &apps.Items[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeApplication makes the Application of one parameter set, as the set's
// template would, and reports it deployed.
func writeApplication(ctx context.Context, set *argov1alpha1.ApplicationSet, p argocd.GeneratorParams) error {
	labels := map[string]string{
		as.LabelApplication: p.Application, as.LabelComponent: p.Component, as.LabelEnvironment: p.Environment,
	}
	for k, v := range set.Labels {
		labels[k] = v
	}
	spec := argov1alpha1.ApplicationSpec{
		Project: p.Project,
		Source: &argov1alpha1.ApplicationSource{RepoURL: p.RepoURL, Path: p.Path, TargetRevision: p.TargetRevision,
			Kustomize: &argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{argov1alpha1.KustomizeImage(p.ImageName + "=" + p.Image)}}},
		Destination: argov1alpha1.ApplicationDestination{Server: p.DestinationServer, Namespace: p.DestinationNamespace},
	}
	// Its workload runs in the destination namespace, the Pod reported as a
	// kubelet would (the stack has neither): PromotionRuns read the digest running.
	res, err := stack.RunWorkload(ctx, k8s, p.DestinationNamespace, p.Name, p.Image, stack.ImageID(p.Image))
	if err != nil {
		return err
	}
	now := metav1.Now()
	status := argov1alpha1.ApplicationStatus{
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced, Revision: "0123456789abcdef0123456789abcdef01234567",
			ComparedTo: argov1alpha1.ComparedTo{Source: *spec.Source.DeepCopy(), Destination: spec.Destination}},
		Health:       argov1alpha1.HealthStatus{Status: "Healthy"},
		Summary:      argov1alpha1.ApplicationSummary{Images: []string{p.Image}},
		Resources:    []argov1alpha1.ResourceStatus{res},
		ReconciledAt: &now,
	}
	// The template's annotations name the binding: the sidecar finds it by them.
	annotations := set.Spec.Template.Annotations
	app := &argov1alpha1.Application{}
	err = k8s.Get(ctx, client.ObjectKey{Namespace: argoNS, Name: p.Name}, app)
	if apierrors.IsNotFound(err) {
		app = &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: p.Name, Labels: labels, Annotations: annotations}, Spec: spec, Status: status}
		return k8s.Create(ctx, app)
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(app.Spec, spec) && reflect.DeepEqual(app.Labels, labels) && reflect.DeepEqual(app.Annotations, annotations) &&
		reflect.DeepEqual(app.Status.Summary, status.Summary) && reflect.DeepEqual(app.Status.Sync.ComparedTo, status.Sync.ComparedTo) &&
		app.Status.Sync.Status == status.Sync.Status && app.Status.Health.Status == status.Health.Status &&
		app.Status.ReconciledAt != nil && time.Since(app.Status.ReconciledAt.Time) < 2*time.Second {
		return nil
	}
	// Compared again (Argo CD's resync, shortened): a run's step counts only comparisons since it started.
	app.Labels, app.Annotations, app.Spec = labels, annotations, spec
	app.Status.Sync, app.Status.Health, app.Status.Summary = status.Sync, status.Health, status.Summary
	app.Status.Resources, app.Status.ReconciledAt = status.Resources, status.ReconciledAt
	return k8s.Update(ctx, app)
}
