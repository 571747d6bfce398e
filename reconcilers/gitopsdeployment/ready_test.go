package gitopsdeployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func TestReadiness(t *testing.T) {
	st := func(sync v1.SyncStatusCode, health v1.HealthStatusCode, conds ...v1.GitOpsDeploymentCondition) v1.GitOpsDeploymentStatus {
		return v1.GitOpsDeploymentStatus{Sync: v1.SyncStatus{Status: sync}, Health: v1.HealthStatus{Status: health}, Conditions: conds}
	}
	cond := func(typ string, status v1.GitOpsConditionStatus) v1.GitOpsDeploymentCondition {
		return v1.GitOpsDeploymentCondition{Type: v1.GitOpsConditionType(typ), Status: status, Message: typ + " says so"}
	}
	cases := []struct {
		name    string
		applied bool
		manual  bool
		st      v1.GitOpsDeploymentStatus
		status  metav1.ConditionStatus
		reason  string
	}{
		{"no Application yet", false, false, st("", ""), metav1.ConditionUnknown, "Progressing"},
		{"not compared yet", true, false, st("", ""), metav1.ConditionUnknown, "Progressing"},
		{"synced and healthy", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy), metav1.ConditionTrue, "SyncedAndHealthy"},
		{"out of sync", true, false, st(v1.SyncStatusCodeOutOfSync, v1.HealthStatusHealthy), metav1.ConditionUnknown, "Progressing"},
		{"progressing", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusProgressing), metav1.ConditionUnknown, "Progressing"},
		{"degraded", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusDegraded), metav1.ConditionFalse, "Degraded"},
		{"Argo CD error", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy, cond("ComparisonError", v1.GitOpsConditionStatusTrue)), metav1.ConditionFalse, "ComparisonError"},
		{"resolved Argo CD error", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy, cond("ComparisonError", v1.GitOpsConditionStatusFalse)), metav1.ConditionTrue, "SyncedAndHealthy"},
		{"Argo CD warning", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy, cond("SharedResourceWarning", v1.GitOpsConditionStatusTrue)), metav1.ConditionTrue, "SyncedAndHealthy"},
		{"manual, out of sync and healthy", true, true, st(v1.SyncStatusCodeOutOfSync, v1.HealthStatusHealthy), metav1.ConditionTrue, "Healthy"},
		{"manual, out of sync and degraded", true, true, st(v1.SyncStatusCodeOutOfSync, v1.HealthStatusDegraded), metav1.ConditionFalse, "Degraded"},
		{"manual, synced and healthy", true, true, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy), metav1.ConditionTrue, "SyncedAndHealthy"},
		{"resolved ErrorOccurred", true, false, st(v1.SyncStatusCodeSynced, v1.HealthStatusHealthy, cond("ErrorOccurred", v1.GitOpsConditionStatusFalse)), metav1.ConditionTrue, "SyncedAndHealthy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readiness(c.applied, c.manual, c.st)
			if got.Status != c.status || got.Reason != c.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, c.status, c.reason)
			}
		})
	}
}
