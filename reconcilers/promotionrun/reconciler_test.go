//go:build !unit

package promotionrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

const (
	wait = 30 * time.Second
	tick = 100 * time.Millisecond
)

// tenant makes a namespace with Applications appa and appb, each with a
// Component <app>-fe, Snapshots snap-a (of appa) and snap-b (of appb), and
// Environments dev and staging (parent dev).
func tenant(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := "tenant-" + rand.String(6)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, app := range []string{"appa", "appb"} {
		require.NoError(t, k8s.Create(ctx, &as.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app}, Spec: as.ApplicationSpec{DisplayName: app}}))
		require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-" + strings.TrimPrefix(app, "app")},
			Spec: as.SnapshotSpec{Application: app, Components: []as.SnapshotComponent{{Name: app + "-fe", ContainerImage: "quay.io/x/fe:v1"}}}}))
	}
	for _, app := range []string{"appa", "appb"} {
		comp := &as.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-fe"},
			Spec: as.ComponentSpec{ComponentName: app + "-fe", Application: app, ContainerImage: "quay.io/x/fe:v0"}}
		require.NoError(t, k8s.Create(ctx, comp))
		comp.Status.GitOps = as.GitOpsStatus{RepositoryURL: "https://git.example.test/gitops.git", Branch: "main", Context: "components/fe"}
		require.NoError(t, k8s.Status().Update(ctx, comp))
	}
	for _, e := range []as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, &e))
	}
	return ns
}

func manual(ns, name, app, snapshot, env string) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
		Snapshot: snapshot, Application: app, ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env}}}
}

func waitRun(t *testing.T, run *as.PromotionRun, what string, ok func(*as.PromotionRun) bool) *as.PromotionRun {
	t.Helper()
	return stack.WaitFor(t, k8s, run, wait, "was "+what, ok)
}

func failedWith(msg string) func(*as.PromotionRun) bool {
	return func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionErrorOccurred)
		return r.Status.State == as.PromotionRunStateCompleted && r.Status.CompletionResult == as.PromotionRunCompleteResultFailure &&
			c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, msg)
	}
}

// readyIs says the run's Ready condition has status and reason at its generation.
func readyIs(status metav1.ConditionStatus, reason string) func(*as.PromotionRun) bool {
	return func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == r.Generation && r.Status.ObservedGeneration == r.Generation
	}
}

func state(s as.PromotionRunState) func(*as.PromotionRun) bool {
	return func(r *as.PromotionRun) bool { return r.Status.State == s }
}

func bindings(t *testing.T, ns string) []as.SnapshotEnvironmentBinding {
	t.Helper()
	var list as.SnapshotEnvironmentBindingList
	require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	return list.Items
}

func warning(t *testing.T, run *as.PromotionRun, reason string) {
	t.Helper()
	stack.WaitForEvent(t, k8s, run, corev1.EventTypeWarning, reason, "", wait)
}

func TestManualPromotionCreatesTheBindingAndTimesOut(t *testing.T) {
	ns := tenant(t)
	run := manual(ns, "to-staging", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(context.Background(), run))

	name := "appa-staging" + promotionrun.BindingSuffix
	active := waitRun(t, run, "Active with its binding", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive && len(r.Status.ActiveBindings) == 1
	})
	assert.Equal(t, []string{name}, active.Status.ActiveBindings)
	assert.False(t, active.Status.PromotionStartTime.IsZero())
	waitRun(t, run, "Ready=Unknown while Active", readyIs(metav1.ConditionUnknown, "Progressing"))
	require.Len(t, active.Status.EnvironmentStatus, 1)
	step := active.Status.EnvironmentStatus[0]
	// The step entered staging when the run started (no gate held it).
	if assert.NotNil(t, step.StartTime) {
		assert.False(t, step.StartTime.Before(&active.Status.PromotionStartTime))
	}
	step.StartTime = nil
	assert.Equal(t, as.PromotionRunEnvironmentStatus{Step: 1, EnvironmentName: "staging", Status: as.PromotionRunEnvironmentStatusInProgress,
		DisplayStatus: "0 of 1 components deployed; waiting for appa-fe: no GitOpsDeployment yet"}, step)
	seb := &as.SnapshotEnvironmentBinding{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, seb))
	assert.Equal(t, as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap-a"}, seb.Spec)

	// Nothing deploys here (no Argo CD): the run fails at its deadline.
	got := waitRun(t, run, "timed out", failedWith("timed out after "+timeout.String()+" promoting to staging: 0 of 1 components deployed"))
	assert.Equal(t, as.PromotionRunEnvironmentStatusFailure, got.Status.EnvironmentStatus[0].Status)
	assert.GreaterOrEqual(t, got.Status.Conditions[0].LastTransitionTime.Sub(got.Status.PromotionStartTime.Time), timeout-time.Second)
	waitRun(t, run, "Ready=False once failed", readyIs(metav1.ConditionFalse, "PromotionFailed"))
	warning(t, got, promotionrun.ReasonTimedOut)
}

func TestManualPromotionUpdatesTheExistingBinding(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap-a2"},
		Spec: as.SnapshotSpec{Application: "appa", Components: []as.SnapshotComponent{{Name: "appa-fe", ContainerImage: "quay.io/x/fe:v2"}}}}))
	mine := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "my-binding"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-a",
			Components: []as.BindingComponent{{Name: "appa-fe", Configuration: as.BindingComponentConfiguration{Env: []as.EnvVarPair{{Name: "A", Value: "b"}}}}}}}
	require.NoError(t, k8s.Create(ctx, mine))
	run := manual(ns, "to-dev", "appa", "snap-a2", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "Active on my-binding", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive && len(r.Status.ActiveBindings) == 1 && r.Status.ActiveBindings[0] == "my-binding"
	})
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(mine), mine))
	assert.Equal(t, "snap-a2", mine.Spec.Snapshot)
	assert.Len(t, mine.Spec.Components, 1, "the binding's own configuration is kept")
	assert.Len(t, bindings(t, ns), 1, "no second binding for the pair")
}

func TestInvalidPromotionsFailAndBindNothing(t *testing.T) {
	ns := tenant(t)
	// A binding of that name for another environment is not taken over.
	require.NoError(t, k8s.Create(context.Background(), &as.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appb-staging" + promotionrun.BindingSuffix},
		Spec:       as.SnapshotEnvironmentBindingSpec{Application: "appb", Environment: "dev", Snapshot: "snap-b"}}))
	// A binding that cannot deploy is waited on (it may be fixed) until the deadline.
	require.NoError(t, k8s.Create(context.Background(), &as.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap-a",
			Components: []as.BindingComponent{{Name: "appa-fe"}, {Name: "appa-fe"}}}}))
	cases := []struct {
		name string
		run  *as.PromotionRun
		msg  string
		// bound is the binding the run got to, if any.
		bound []string
		// reason is the Warning Event's: the failure's.
		reason string
	}{
		{"missing snapshot", manual(ns, "r1", "appa", "nope", "dev"), `Snapshot "nope" not found`, nil, "SnapshotNotFound"},
		{"snapshot of another application", manual(ns, "r2", "appa", "snap-b", "dev"), `Snapshot "snap-b" is of Application "appb", not "appa"`, nil,
			promotionrun.ReasonSnapshotOfAnotherApplication},
		{"missing environment", manual(ns, "r4", "appa", "snap-a", "nope"), `Environment "nope" not found`, nil, "EnvironmentNotFound"},
		{"binding name taken", manual(ns, "r5", "appb", "snap-b", "staging"),
			`SnapshotEnvironmentBinding appb-staging-generated-binding exists for Application "appb" and Environment "dev"`, nil, promotionrun.ReasonBindingNameTaken},
		{"broken binding", manual(ns, "r6", "appa", "snap-a", "staging"),
			`timed out after 6s promoting to staging: SnapshotEnvironmentBinding broken: component "appa-fe" is listed twice in spec.components`, []string{"broken"},
			promotionrun.ReasonTimedOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, k8s.Create(context.Background(), tc.run))
			got := waitRun(t, tc.run, "failed", failedWith(tc.msg))
			warning(t, got, tc.reason)
			assert.Equal(t, tc.bound, got.Status.ActiveBindings)
		})
	}
	assert.Len(t, bindings(t, ns), 2, "an invalid promotion creates no binding")
	want := map[string]string{"broken": "snap-a", "appb-staging-generated-binding": "snap-b"}
	for _, b := range bindings(t, ns) {
		assert.Equal(t, want[b.Name], b.Spec.Snapshot, "an invalid promotion changes no binding")
	}
}

func TestMissingApplicationFails(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	require.NoError(t, k8s.Create(ctx, &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"},
		Spec: as.SnapshotSpec{Application: "gone", Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: "quay.io/x/fe:v1"}}}}))
	run := manual(ns, "r", "gone", "orphan", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "failed", failedWith(`Application "gone" not found`))
	assert.Empty(t, bindings(t, ns))
}

// activeThenWaiting starts a run of appa to dev, then one to staging, which waits.
func activeThenWaiting(t *testing.T, ns string) (first, second *as.PromotionRun) {
	t.Helper()
	first = manual(ns, "a-first", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(context.Background(), first))
	waitRun(t, first, "Active", state(as.PromotionRunStateActive))
	second = manual(ns, "a-second", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(context.Background(), second))
	waitRun(t, second, "Waiting", state(as.PromotionRunStateWaiting))
	waitRun(t, second, "Ready=Unknown while waiting", readyIs(metav1.ConditionUnknown, as.WaitingReasonRunActive))
	waitRun(t, second, "Waiting for the first", func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == as.WaitingReasonRunActive &&
			c.Message == "PromotionRun a-first of Application appa to complete"
	})
	return first, second
}

func TestOneActivePromotionPerApplication(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	first, second := activeThenWaiting(t, ns)
	// Another application, and the same application in another tenant, are not held up.
	otherApp := manual(ns, "b", "appb", "snap-b", "dev")
	require.NoError(t, k8s.Create(ctx, otherApp))
	otherNS := tenant(t)
	otherTenant := manual(otherNS, "a", "appa", "snap-a", "dev")
	require.NoError(t, k8s.Create(ctx, otherTenant))

	waitRun(t, otherApp, "Active", state(as.PromotionRunStateActive))
	waitRun(t, otherTenant, "Active", state(as.PromotionRunStateActive))
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(second), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 2*time.Second, tick, "the second run started while the first was active")
	for _, b := range bindings(t, ns) {
		assert.NotEqual(t, "staging", b.Spec.Environment, "the waiting run bound something")
	}

	// The first one ends (timeout); the second starts then, not before.
	done := waitRun(t, first, "completed", state(as.PromotionRunStateCompleted))
	started := waitRun(t, second, "Active", state(as.PromotionRunStateActive))
	assert.Nil(t, meta.FindStatusCondition(started.Status.Conditions, as.PromotionRunConditionWaiting), "a moving run has no Waiting condition")
	assert.False(t, started.Status.PromotionStartTime.Before(&done.Status.Conditions[0].LastTransitionTime))
}

func TestDeletingTheActiveRunStartsTheNext(t *testing.T) {
	ctx := context.Background()
	first, second := activeThenWaiting(t, tenant(t))
	require.NoError(t, k8s.Delete(ctx, first))
	got := &as.PromotionRun{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(second), got) == nil && got.Status.State == as.PromotionRunStateActive
	}, timeout/2, tick, "the waiting run did not start when the active one was deleted")
}

func TestAutomatedPromotionStartsAtTheInitialEnvironment(t *testing.T) {
	ns := tenant(t)
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto"}, Spec: as.PromotionRunSpec{
		Snapshot: "snap-a", Application: "appa", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}}
	require.NoError(t, k8s.Create(context.Background(), run))
	got := waitRun(t, run, "Active on dev", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive && len(r.Status.ActiveBindings) == 1
	})
	assert.Equal(t, []string{"appa-dev" + promotionrun.BindingSuffix}, got.Status.ActiveBindings)
	require.Len(t, got.Status.EnvironmentStatus, 1, "staging only after dev is deployed")
	assert.Equal(t, "dev", got.Status.EnvironmentStatus[0].EnvironmentName)
}

// A run completed before runs had a Ready condition (a sidecar upgrade) gets
// it at its next pass; a completed run is otherwise never written.
func TestRunCompletedBeforeReadyGetsIt(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	run := manual(ns, "old", "appa", "nope", "dev")
	require.NoError(t, k8s.Create(ctx, run))
	got := waitRun(t, run, "failed", failedWith(`Snapshot "nope" not found`))
	warning(t, got, "SnapshotNotFound")

	// What an older sidecar left: completed, no Ready (from a fresh read: the
	// reconciler may still be writing the run).
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
			return err
		}
		meta.RemoveStatusCondition(&got.Status.Conditions, "Ready")
		got.Status.ObservedGeneration = 0
		return k8s.Status().Update(ctx, got)
	}))
	waitRun(t, run, "Ready=False again", readyIs(metav1.ConditionFalse, "PromotionFailed"))
}
