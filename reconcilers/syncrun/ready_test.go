package syncrun

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func TestReadiness(t *testing.T) {
	failed := []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue, Message: "The synchronize operation Failed: boom"}}
	cases := []struct {
		st      v1.GitOpsDeploymentSyncRunStatus
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{v1.GitOpsDeploymentSyncRunStatus{}, metav1.ConditionUnknown, "Progressing", "the sync has not started"},
		{v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationRunning}, metav1.ConditionUnknown, "Progressing", "the sync is Running"},
		{v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationTerminating}, metav1.ConditionUnknown, "Progressing", "the sync is Terminating"},
		{v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded}, metav1.ConditionTrue, "SyncSucceeded", MsgSucceeded},
		{v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationFailed, Conditions: failed}, metav1.ConditionFalse, "SyncFailed", "The synchronize operation Failed: boom"},
		{v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationError, Conditions: failed}, metav1.ConditionFalse, "SyncFailed", "The synchronize operation Failed: boom"},
	}
	for _, c := range cases {
		t.Run(string(c.st.Phase), func(t *testing.T) {
			got := readiness(c.st)
			if got.Status != c.status || got.Reason != c.reason || got.Message != c.message {
				t.Fatalf("got %+v, want %s/%s/%q", got, c.status, c.reason, c.message)
			}
		})
	}
}

func TestNeedsReady(t *testing.T) {
	ready := v1.GitOpsDeploymentCondition{Type: "Ready", Status: v1.GitOpsConditionStatusTrue}
	errCond := v1.GitOpsDeploymentCondition{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusFalse}
	cases := map[string]struct {
		st   v1.GitOpsDeploymentSyncRunStatus
		want bool
	}{
		"finished before Ready existed": {v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded, Conditions: []v1.GitOpsDeploymentCondition{errCond}}, true},
		"failed before Ready existed":   {v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationError}, true},
		"finished with Ready":           {v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationFailed, Conditions: []v1.GitOpsDeploymentCondition{errCond, ready}}, false},
		"running: the pass sets it":     {v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationRunning}, false},
		"not started":                   {v1.GitOpsDeploymentSyncRunStatus{}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := needsReady(&v1.GitOpsDeploymentSyncRun{Status: c.st}); got != c.want {
				t.Fatalf("needsReady = %v, want %v", got, c.want)
			}
		})
	}
}
