package managedenvironment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ConnectionInitializationSucceeded for each outcome: True when connected,
// else False with the refusal's reason and a message saying Argo CD has no
// cluster for it meanwhile.
func TestCondition(t *testing.T) {
	env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Name: "prod", Generation: 4}}
	cases := []struct {
		name    string
		refusal *kernel.Refusal
		want    metav1.Condition
	}{
		{"connected", nil, metav1.Condition{Status: metav1.ConditionTrue, Reason: v1.ManagedEnvironmentReasonSucceeded}},
		{"secret missing", kernel.Refuse(v1.ManagedEnvironmentReasonSecretNotFound, "secret 'x' not found"),
			metav1.Condition{Status: metav1.ConditionFalse, Reason: v1.ManagedEnvironmentReasonSecretNotFound, Message: "secret 'x' not found" + noClusterSuffix}},
		{"name taken", collision("cluster-x"),
			metav1.Condition{Status: metav1.ConditionFalse, Reason: v1.ManagedEnvironmentReasonClusterSecretNameCollision,
				Message: "the Argo CD cluster Secret cluster-x exists and was not created by the GitOps Service for this environment" + noClusterSuffix}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := condition(env, tc.refusal)
			assert.Equal(t, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, got.Type)
			assert.Equal(t, tc.want.Status, got.Status)
			assert.Equal(t, tc.want.Reason, got.Reason)
			assert.Equal(t, tc.want.Message, got.Message)
			assert.Equal(t, int64(4), got.ObservedGeneration)
		})
	}
}
