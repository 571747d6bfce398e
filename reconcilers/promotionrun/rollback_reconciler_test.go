//go:build !unit

package promotionrun_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

// playArgo stands in for Argo CD in ns (there is none in this suite): every
// binding's Snapshot is deployed as an Application the binding owns, Synced
// and Healthy, but an image with "bad" in it is Degraded (fails verification).
func playArgo(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := deployBindings(ctx, ns); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
				t.Logf("playing Argo CD: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func deployBindings(ctx context.Context, ns string) error {
	tenant := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, tenant); err != nil {
		return err
	}
	var sebs as.SnapshotEnvironmentBindingList
	if err := k8s.List(ctx, &sebs, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, seb := range sebs.Items {
		snap := &as.Snapshot{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: seb.Spec.Snapshot}, snap); err != nil {
			return err
		}
		for _, c := range snap.Spec.Components {
			labels, annotations := ownership.Meta(ownership.KindBinding, ns, seb.Name, string(seb.UID))
			labels[as.LabelApplication], labels[as.LabelComponent], labels[as.LabelEnvironment] = seb.Spec.Application, c.Name, seb.Spec.Environment
			status := health.HealthStatusHealthy
			if strings.Contains(c.ContainerImage, "bad") {
				status = health.HealthStatusDegraded
			}
			name := string(seb.UID)[:8] + "-" + c.Name
			res, err := runWorkload(ctx, ns, name, c.ContainerImage)
			if err != nil {
				return err
			}
			now := metav1.Now()
			want := argov1alpha1.Application{
				ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: name, Labels: labels, Annotations: annotations},
				Spec: argov1alpha1.ApplicationSpec{Project: argocd.ProjectName(string(tenant.UID)),
					Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.test/gitops.git", Kustomize: &argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{argov1alpha1.KustomizeImage("fe=" + c.ContainerImage)}}},
					Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: ns}},
				Status: argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced},
					Health: argov1alpha1.HealthStatus{Status: status}, Summary: argov1alpha1.ApplicationSummary{Images: []string{c.ContainerImage}},
					Resources: []argov1alpha1.ResourceStatus{res}, ReconciledAt: &now},
			}
			// Compared with the spec it has, as Argo CD's status says.
			want.Status.Sync.ComparedTo = argov1alpha1.ComparedTo{Source: *want.Spec.Source.DeepCopy(), Destination: want.Spec.Destination}
			app := &argov1alpha1.Application{}
			err = k8s.Get(ctx, client.ObjectKeyFromObject(&want), app)
			if apierrors.IsNotFound(err) {
				if err := k8s.Create(ctx, &want); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			// Argo CD compares again every few seconds here (its resync, shortened).
			if app.Spec.Source.Kustomize.Images[0] == want.Spec.Source.Kustomize.Images[0] && app.Status.Health.Status == status &&
				app.Status.ReconciledAt != nil && time.Since(app.Status.ReconciledAt.Time) < 2*time.Second {
				continue
			}
			app.Spec, app.Status = want.Spec, want.Status
			if err := k8s.Update(ctx, app); err != nil {
				return err
			}
		}
	}
	return nil
}

func snapshot(t *testing.T, ns, name, image string) {
	t.Helper()
	require.NoError(t, k8s.Create(context.Background(), &as.Snapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.SnapshotSpec{Application: "appa", Components: []as.SnapshotComponent{{Name: "appa-fe", ContainerImage: image}}}}))
}

func rollback(ns, name, snapshot, env string) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
		Snapshot: snapshot, Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}}}
}

func automated(ns, name, snapshot string) *as.PromotionRun {
	return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
		Snapshot: snapshot, Application: "appa", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}}}
}

func succeeded(r *as.PromotionRun) bool {
	return r.Status.State == as.PromotionRunStateCompleted && r.Status.CompletionResult == as.PromotionRunCompleteResultSuccess
}

// run creates the run and waits until it completed as ok says.
func run(t *testing.T, r *as.PromotionRun, what string, ok func(*as.PromotionRun) bool) *as.PromotionRun {
	t.Helper()
	require.NoError(t, k8s.Create(context.Background(), r))
	return waitRun(t, r, what, ok)
}

func getHistory(t *testing.T, ns, env string) *as.PromotionHistory {
	t.Helper()
	h := &as.PromotionHistory{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: promotionrun.HistoryName("appa", env)}, h))
	return h
}

func bindingSnapshot(t *testing.T, ns, env string) string {
	t.Helper()
	for _, b := range bindings(t, ns) {
		if b.Spec.Application == "appa" && b.Spec.Environment == env {
			return b.Spec.Snapshot
		}
	}
	return ""
}

func TestRollbackRejectsAndForceOverrides(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	snapshot(t, ns, "snap-a2", "quay.io/x/fe:v2")

	p1 := run(t, manual(ns, "p1", "appa", "snap-a", "staging"), "verified", succeeded)
	run(t, manual(ns, "p2", "appa", "snap-a2", "staging"), "verified", succeeded)
	require.Equal(t, "snap-a2", bindingSnapshot(t, ns, "staging"))

	// Verified but bad all the same: a person rolls it back.
	rb := run(t, rollback(ns, "rb", "snap-a2", "staging"), "rolled back", succeeded)
	assert.Equal(t, &as.RollbackStatus{Snapshot: "snap-a"}, rb.Status.Rollback)
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "staging"), "the binding points at the last verified Snapshot again")
	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 3)
	assert.Equal(t, []string{"p1", "p2", "rb"}, []string{h.Status.Entries[0].PromotionRun, h.Status.Entries[1].PromotionRun, h.Status.Entries[2].PromotionRun})
	assert.Equal(t, as.PromotionKindRollback, h.Status.Entries[2].Kind)
	assert.Equal(t, "snap-a", h.Status.Entries[2].Snapshot)
	assert.Equal(t, "rb", h.Status.Entries[1].RolledBackBy)
	assert.NotNil(t, h.Status.Entries[0].SnapshotCreated)
	require.Len(t, h.Status.Rejected, 1)
	assert.Equal(t, "snap-a2", h.Status.Rejected[0].Snapshot)
	assert.True(t, h.Held())

	// A manual promotion of the rejected Snapshot is refused, and changes nothing.
	refused := run(t, manual(ns, "p3", "appa", "snap-a2", "dev"), "refused", failedWith("Snapshot snap-a2 was rolled back out of Environment staging by rb"))
	stack.WaitForEvent(t, k8s, refused, corev1.EventTypeWarning, as.PromotionRunReasonSnapshotRejected, "set spec.manualPromotion.force", wait)
	assert.Empty(t, refused.Status.ActiveBindings)
	assert.Equal(t, "", bindingSnapshot(t, ns, "dev"), "a refused promotion binds nothing")

	// Unless forced.
	forced := manual(ns, "p4", "appa", "snap-a2", "staging")
	forced.Spec.ManualPromotion.Force = true
	run(t, forced, "forced through", succeeded)
	assert.Equal(t, "snap-a2", bindingSnapshot(t, ns, "staging"))

	// The history outlives the runs.
	for _, name := range []string{"p1", "p2", "rb", "p4"} {
		require.NoError(t, k8s.Delete(ctx, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	}
	stack.WaitGone(t, k8s, p1, wait)
	h = getHistory(t, ns, "staging")
	assert.Len(t, h.Status.Entries, 4)
	assert.Len(t, h.Status.Rejected, 1)
}

func TestRollbackWithNothingToRollBackToChangesNothing(t *testing.T) {
	ns := tenant(t)
	playArgo(t, ns)
	run(t, manual(ns, "p1", "appa", "snap-a", "staging"), "verified", succeeded)
	run(t, rollback(ns, "rb", "snap-a", "staging"), "refused", failedWith("no Snapshot other than snap-a was verified in Environment staging"))
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "staging"))
	h := getHistory(t, ns, "staging")
	assert.Empty(t, h.Status.Rejected)
	assert.False(t, h.Held())

	// The CRD refuses a forced rollback (force is for promoting a rejected Snapshot).
	forced := rollback(ns, "rb-forced", "snap-a", "staging")
	forced.Spec.ManualPromotion.Force = true
	err := k8s.Create(context.Background(), forced)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "a rollback is not forced")
}

func TestAutomaticRollbackHoldAndRelease(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	staging := &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "staging"}, staging))
	patch := client.MergeFrom(staging.DeepCopy()) // the sidecar writes the Environment too: no optimistic lock
	staging.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
	require.NoError(t, k8s.Patch(ctx, staging, patch))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod"},
		Spec: as.EnvironmentSpec{ParentEnvironment: "staging", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}))
	snapshot(t, ns, "snap-bad", "quay.io/x/fe:bad")
	snapshot(t, ns, "snap-a2", "quay.io/x/fe:v2")

	a1 := run(t, automated(ns, "a1", "snap-a"), "verified in dev, staging and prod", succeeded)
	assert.Len(t, a1.Status.EnvironmentStatus, 3)

	// The bad Snapshot fails verification in staging (its deadline): staging asks for a rollback.
	run(t, manual(ns, "p-bad", "appa", "snap-bad", "staging"), "failed", failedWith("timed out"))
	rb := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-bad-rollback"}}
	rb = stack.WaitFor(t, k8s, rb, wait, "the automatic rollback completed", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateCompleted })
	require.True(t, succeeded(rb), "the rollback failed: %+v", rb.Status)
	assert.Equal(t, "snap-bad", rb.Spec.Snapshot)
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "staging"))
	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 3)
	assert.Equal(t, as.PromotionRunCompleteResultFailure, h.Status.Entries[1].Result)
	assert.True(t, h.Held())

	// Automated promotion never picks the rejected Snapshot again.
	run(t, automated(ns, "a-bad", "snap-bad"), "refused", failedWith("Snapshot snap-bad was rolled back out of Environment staging"))

	// A good Snapshot goes into staging but holds there: prod waits for the release.
	a2 := automated(ns, "a2", "snap-a2")
	require.NoError(t, k8s.Create(ctx, a2))
	held := waitRun(t, a2, "held out of staging", func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, "Ready")
		return r.Status.State == as.PromotionRunStateActive && c != nil && c.Reason == as.PromotionRunReasonPromotionHeld
	})
	assert.Contains(t, meta.FindStatusCondition(held.Status.Conditions, "Ready").Message, "staging (rolled back by p-bad-rollback")
	assert.Len(t, held.Status.EnvironmentStatus, 2, "nothing promoted out of staging")
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "prod"))
	require.Never(t, func() bool { return bindingSnapshot(t, ns, "prod") != "snap-a" }, 2*time.Second, tick, "promoted out of a held Environment")

	h = getHistory(t, ns, "staging")
	now := metav1.NewTime(time.Now())
	release := client.MergeFrom(h.DeepCopy())
	h.Spec.ReleasedAt = &now
	require.NoError(t, k8s.Patch(ctx, h, release))
	done := waitRun(t, a2, "released and promoted to prod", succeeded)
	assert.Len(t, done.Status.EnvironmentStatus, 3)
	assert.Equal(t, "snap-a2", bindingSnapshot(t, ns, "prod"))
}
