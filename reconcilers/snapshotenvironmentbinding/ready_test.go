package snapshotenvironmentbinding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestReadiness(t *testing.T) {
	all := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: as.ComponentDeploymentConditionAllComponentsDeployed, Status: status, Reason: reason, Message: msg}
	}
	cases := []struct {
		name     string
		all      *metav1.Condition
		deployed []as.BindingStatusGitOpsDeployment
		status   metav1.ConditionStatus
		reason   string
	}{
		{"nothing yet", nil, nil, metav1.ConditionUnknown, "Progressing"},
		{"all deployed", all(metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced, "2 of 2 components deployed"), nil, metav1.ConditionTrue, as.ComponentDeploymentConditionAllComponentsDeployed},
		{"some deployed", all(metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced, "1 of 2 components deployed"), nil, metav1.ConditionUnknown, "Progressing"},
		{"a component degraded", all(metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced, "2 of 2 components deployed"),
			[]as.BindingStatusGitOpsDeployment{{ComponentName: "fe", GitOpsDeploymentHealthStatus: "Healthy"}, {ComponentName: "be", GitOpsDeploymentHealthStatus: "Degraded"}}, metav1.ConditionFalse, "Degraded"},
		{"a sync refused", all(metav1.ConditionFalse, as.ComponentDeploymentConditionErrorOccurred, "0 of 1 components deployed; SyncError: x"), nil, metav1.ConditionFalse, "SyncError"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readiness(c.all, c.deployed)
			if got.Status != c.status || got.Reason != c.reason {
				t.Fatalf("got %+v, want %s/%s", got, c.status, c.reason)
			}
			if c.all != nil && c.deployed == nil && got.Message != c.all.Message {
				t.Fatalf("message %q, want %q", got.Message, c.all.Message)
			}
		})
	}
}
