//go:build !unit

package promotionrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
)

// An Environment that requires a clean preview holds a PromotionRun into it
// (Ready Unknown, PreviewRequired) until one of the run's Snapshot completed
// clean within the window; a preview with dry-run errors does not count.
func TestPromotionRunWaitsForACleanPreview(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	updateEnv(t, ns, "staging", func(env *as.Environment) {
		env.Spec.Preview = &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 10 * time.Minute}}
	})

	run := manual(ns, "gated", "appa", "snap-a", "staging")
	require.NoError(t, k8s.Create(ctx, run))
	waitRun(t, run, "held for a preview", readyIs(metav1.ConditionUnknown, promotionrun.ReasonPreviewRequired))

	previewDone(t, ns, "with-errors", "snap-a", "staging", false)
	// The completed preview wakes the run (its watch): it stays held.
	got := &as.PromotionRun{}
	require.Never(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(run), got) == nil && got.Status.State != as.PromotionRunStateWaiting
	}, 3*time.Second, tick, "a preview with dry-run errors let the run start")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(run), got))
	assert.True(t, waitingFor(promotionrun.ReasonPreviewRequired, "to Environment staging completed within 10m0s")(got), "%+v", got.Status.Conditions)
	assert.True(t, readyIs(metav1.ConditionUnknown, promotionrun.ReasonPreviewRequired)(got), "%+v", got.Status.Conditions)

	previewDone(t, ns, "clean", "snap-a", "staging", true)
	waitRun(t, run, "started after the clean preview", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive || r.Status.State == as.PromotionRunStateCompleted
	})
}

// An automated promotion is held by the preview every Environment it enters
// asks for, not only by its first one's: dev (no preview required) is
// promoted, staging (requires one) holds the run with PreviewRequired naming
// staging, and a clean preview for staging lets it go on, woken by the
// preview's watch (well before the WaitingRetry poll).
func TestAutomatedPromotionWaitsForAPreviewOfTheNextEnvironment(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	updateEnv(t, ns, "staging", func(env *as.Environment) {
		env.Spec.Preview = &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 10 * time.Minute}}
	})

	r := automated(ns, "auto", "snap-a")
	require.NoError(t, k8s.Create(ctx, r))
	held := waitRun(t, r, "promoted to dev, held before staging for its preview", func(r *as.PromotionRun) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, as.PromotionRunConditionWaiting)
		return r.Status.State == as.PromotionRunStateActive && len(r.Status.EnvironmentStatus) == 1 &&
			r.Status.EnvironmentStatus[0].Status == as.PromotionRunEnvironmentStatusSuccess &&
			c != nil && c.Status == metav1.ConditionTrue && c.Reason == promotionrun.ReasonPreviewRequired
	})
	assert.Equal(t, "dev", held.Status.EnvironmentStatus[0].EnvironmentName)
	c := meta.FindStatusCondition(held.Status.Conditions, as.PromotionRunConditionWaiting)
	assert.Equal(t, "a clean PromotionPreview of Snapshot snap-a to Environment staging completed within 10m0s (the Environment requires it)", c.Message)
	noBindingFor(t, ns, "staging")

	// A clean preview of another Environment or Snapshot does not let it in.
	previewDone(t, ns, "of-dev", "snap-a", "dev", true)
	previewDone(t, ns, "of-snap-b", "snap-b", "staging", true)
	require.Never(t, func() bool {
		got := &as.PromotionRun{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(r), got) == nil && len(got.Status.EnvironmentStatus) != 1
	}, 3*time.Second, tick, "a preview of something else let the run into staging")
	noBindingFor(t, ns, "staging")

	previewDone(t, ns, "of-staging", "snap-a", "staging", true)
	got := &as.PromotionRun{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(r), got) == nil && len(got.Status.EnvironmentStatus) == 2 &&
			meta.FindStatusCondition(got.Status.Conditions, as.PromotionRunConditionWaiting) == nil
	}, 10*time.Second, tick, "the clean preview of staging (its watch) did not let the run in")
	assert.Equal(t, "staging", got.Status.EnvironmentStatus[1].EnvironmentName)
	done := waitRun(t, r, "promoted to staging", succeeded)
	assert.Equal(t, []string{"dev", "staging"}, []string{done.Status.EnvironmentStatus[0].EnvironmentName, done.Status.EnvironmentStatus[1].EnvironmentName})
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "staging"))
}

// previewDone creates a PromotionPreview and writes it completed now, as the
// PromotionPreview reconciler would (previews are off in this suite).
func previewDone(t *testing.T, ns, name, snapshot, env string, clean bool) {
	t.Helper()
	ctx := context.Background()
	pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.PromotionPreviewSpec{Snapshot: snapshot, Application: "appa", TargetEnvironment: env}}
	require.NoError(t, k8s.Create(ctx, pp))
	now := metav1.Now()
	pp.Status = as.PromotionPreviewStatus{ObservedGeneration: pp.Generation, CompletedAt: &now, Clean: clean}
	require.NoError(t, k8s.Status().Update(ctx, pp))
}
