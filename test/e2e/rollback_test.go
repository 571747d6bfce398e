package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
)

// TestRollbackSticks: with the real Argo CD, snap-2 replaces snap-1 in dev,
// a rollback brings snap-1's images back, rejects snap-2 (a manual promotion
// of it is refused) and the history of dev says so after its runs are gone.
func TestRollbackSticks(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "base")
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"},
		Spec: as.EnvironmentSpec{DisplayName: "Dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}}))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-2", "v2")))
	promote := func(name, snap string) *as.PromotionRun {
		return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: as.PromotionRunSpec{
			Snapshot: snap, Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev"}}}
	}
	runs := []*as.PromotionRun{promote("p1", "snap-1"), promote("p2", "snap-2"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rb"}, Spec: as.PromotionRunSpec{
			Snapshot: "snap-2", Application: "appa", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "dev", Rollback: true}}}}
	for _, r := range runs {
		require.NoError(t, k8s.Create(ctx, r))
		waitPromotion(t, r, "Success", promotionSucceeded)
	}
	for _, c := range []string{"frontend", "backend"} {
		d, err := deployment(ns, c)
		require.NoError(t, err)
		assert.True(t, running(d, "quay.io/example/"+c+":v1"), "%s after the rollback: %+v", c, d.Status)
	}

	refused := promote("p3", "snap-2")
	require.NoError(t, k8s.Create(ctx, refused))
	waitPromotion(t, refused, "refused", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateCompleted && r.Status.CompletionResult == as.PromotionRunCompleteResultFailure
	})
	assertEvent(t, refused, corev1.EventTypeWarning, as.PromotionRunReasonSnapshotRejected)

	for _, r := range append(runs, refused) {
		require.NoError(t, k8s.Delete(ctx, r))
	}
	h := &as.PromotionHistory{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: promotionrun.HistoryName("appa", "dev")}, h))
	require.Len(t, h.Status.Entries, 3)
	assert.Equal(t, []string{"snap-1", "snap-2", "snap-1"}, []string{h.Status.Entries[0].Snapshot, h.Status.Entries[1].Snapshot, h.Status.Entries[2].Snapshot})
	assert.Equal(t, "rb", h.Status.Entries[1].RolledBackBy)
	assert.Equal(t, as.PromotionKindRollback, h.Status.Entries[2].Kind)
	require.Len(t, h.Status.Rejected, 1)
	assert.Equal(t, "snap-2", h.Status.Rejected[0].Snapshot)
}
