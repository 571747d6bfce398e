//go:build !unit

package promotionrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	preview := func(name string, clean bool) {
		pp := &as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: as.PromotionPreviewSpec{Snapshot: "snap-a", Application: "appa", TargetEnvironment: "staging"}}
		require.NoError(t, k8s.Create(ctx, pp))
		now := metav1.Now()
		pp.Status = as.PromotionPreviewStatus{ObservedGeneration: pp.Generation, CompletedAt: &now, Clean: clean}
		require.NoError(t, k8s.Status().Update(ctx, pp))
	}
	preview("with-errors", false)
	// The run looks again every UnwatchedRecheck (10 s): it is still held.
	time.Sleep(12 * time.Second)
	got := &as.PromotionRun{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(run), got))
	assert.NotEqual(t, as.PromotionRunStateActive, got.Status.State, "a preview with dry-run errors let the run start")
	assert.True(t, readyIs(metav1.ConditionUnknown, promotionrun.ReasonPreviewRequired)(got), "%+v", got.Status.Conditions)

	preview("clean", true)
	waitRun(t, run, "started after the clean preview", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive || r.Status.State == as.PromotionRunStateCompleted
	})
}
