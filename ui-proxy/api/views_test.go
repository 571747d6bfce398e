package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/ui-proxy/api"
)

// overJSON is v as a client decodes it from the proxy's answer.
func overJSON[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

var at = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// What a view carries comes back as the status the client shows.
func TestViewsRoundTrip(t *testing.T) {
	run := as.NewPromotion("team-a", "shop", "shop-v2", "prod", "", nil)
	run.Name, run.CreationTimestamp = "shop-v2-to-prod-abcde", at
	run.Status = as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultFailure,
		EnvironmentStatus: []as.PromotionRunEnvironmentStatus{{Step: 1, EnvironmentName: "prod", Status: "failure", DisplayStatus: "sync failed",
			Analysis: []as.AnalysisCheckStatus{{Name: "error-rate", Phase: as.AnalysisRunning, Value: "0.01", Successes: 1, Message: "0.01 <= 0.05",
				LastCheckTime: &at, NextCheckTime: &at}, {Name: "health", Phase: as.AnalysisFailed, Failures: 1}}}},
		Conditions: []metav1.Condition{{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "SyncFailed", Message: "boom"}}}
	v := overJSON(t, api.PromotionRunOf(run))
	assert.Equal(t, "prod", v.Target)
	assert.Equal(t, "2026-01-02T03:04:05Z", v.Created)
	assert.Equal(t, run.Status, v.Status())

	sr := &v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: "web-sync-x", CreationTimestamp: at},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "web", RevisionID: "main"}}
	s := overJSON(t, api.SyncRunOf(sr)).Status()
	assert.Equal(t, "main", s.Revision, "the requested revision until it ran")
	assert.False(t, s.Refused() || s.Finished(), "neither started nor refused")
	sr.Status = v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded, Revision: "1a2b3c", StartedAt: &at, SyncStatus: v1.SyncStatusCodeSynced, Health: "Healthy"}
	s = overJSON(t, api.SyncRunOf(sr)).Status()
	assert.Equal(t, sr.Status, s, "a started run comes back as it is")
	sr.Status = v1.GitOpsDeploymentSyncRunStatus{Conditions: []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred,
		Status: v1.GitOpsConditionStatusTrue, Message: "automated"}}}
	s = overJSON(t, api.SyncRunOf(sr)).Status()
	assert.True(t, s.Refused(), "refused before it started, as the run says")

	h := &as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: as.PromotionHistoryName("shop", "prod")},
		Spec: as.PromotionHistorySpec{Application: "shop", Environment: "prod"},
		Status: as.PromotionHistoryStatus{
			Entries: []as.PromotionHistoryEntry{
				{PromotionRun: "a", Kind: "Promotion", Snapshot: "shop-v1", Result: "Success", CompletionTime: at, PromotedBy: "alice", ApprovedBy: []string{"bob"},
					Verifications: []as.ImageVerification{{Component: "web", Image: "r.example/web:v1", Digest: "sha256:aa", Verified: true, Signers: []string{"key ci"},
						Attestations: []string{"https://slsa.dev/provenance/v1"}}}},
				{PromotionRun: "b", Kind: "Rollback", Snapshot: "shop-v1", Result: "Success", CompletionTime: at, RolledBackBy: "carol",
					Analysis: []as.AnalysisCheckStatus{{Name: "error-rate", Phase: as.AnalysisFailed, Value: "0.3", Failures: 2, LastCheckTime: &at}}},
			},
			Rejected: []as.RejectedSnapshot{{Snapshot: "shop-v2"}},
			Hold:     &as.PromotionHold{Since: at, PromotionRun: "b", Snapshot: "shop-v2"}}}
	hv := overJSON(t, *api.HistoryOf(h))
	assert.Equal(t, "b", hv.Entries[0].PromotionRun, "newest first")
	back := hv.Object("team-a")
	assert.Equal(t, h.ObjectMeta, back.ObjectMeta)
	assert.Equal(t, h.Spec, back.Spec)
	assert.Equal(t, h.Status, back.Status)

	d := overJSON(t, api.Deployment{Kind: "SnapshotEnvironmentBinding", Namespace: "team-a", Name: "shop-prod", Application: "shop", Environment: "prod", Snapshot: "shop-v1",
		Components: []api.ComponentState{{Name: "web", Sync: "Synced", Health: "Healthy", Commit: "abc"}},
		Conditions: api.ConditionsOf([]metav1.Condition{{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: metav1.ConditionTrue}})})
	b := d.Binding()
	assert.Equal(t, as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "prod", Snapshot: "shop-v1"}, b.Spec)
	require.Len(t, b.Status.ComponentDeploymentConditions, 1)
	assert.Empty(t, b.Status.BindingConditions)
	assert.Equal(t, "abc", b.Status.GitOpsDeployments[0].GitOpsDeploymentCommitID)

	pv := overJSON(t, api.Preview{Name: "p", Completed: false, CompletedAt: &at})
	assert.Nil(t, pv.Status().CompletedAt, "not completed: no completion time")
}
