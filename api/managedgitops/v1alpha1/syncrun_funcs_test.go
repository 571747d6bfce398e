package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

func TestSyncRunFinishedAndRefused(t *testing.T) {
	started := metav1.Unix(100, 0)
	errorTrue := []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusTrue, Message: "no such deployment"}}
	errorFalse := []v1.GitOpsDeploymentCondition{{Type: v1.GitOpsDeploymentConditionErrorOccurred, Status: v1.GitOpsConditionStatusFalse}}
	cases := map[string]struct {
		status            v1.GitOpsDeploymentSyncRunStatus
		finished, refused bool
	}{
		"new":                                    {},
		"running":                                {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationRunning, StartedAt: &started}},
		"terminating":                            {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationTerminating, StartedAt: &started}},
		"succeeded":                              {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationSucceeded, StartedAt: &started}, finished: true},
		"failed":                                 {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationFailed, StartedAt: &started, Conditions: errorTrue}, finished: true},
		"error":                                  {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationError, StartedAt: &started}, finished: true},
		"refused before it started":              {status: v1.GitOpsDeploymentSyncRunStatus{Conditions: errorTrue}, refused: true},
		"a refusal lifted":                       {status: v1.GitOpsDeploymentSyncRunStatus{Conditions: errorFalse}},
		"an error after the start is no refusal": {status: v1.GitOpsDeploymentSyncRunStatus{Phase: v1.OperationRunning, StartedAt: &started, Conditions: errorTrue}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.finished, tc.status.Finished())
			assert.Equal(t, tc.refused, tc.status.Refused())
		})
	}
}

func TestApplicationName(t *testing.T) {
	assert.Equal(t, "gitopsdepl-1234-abcd", v1.ApplicationName("1234-abcd"))
}
