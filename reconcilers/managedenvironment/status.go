package managedenvironment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// noClusterSuffix ends every failure message: a failing environment has no
// Argo CD cluster (ours is deleted), so nothing deploys to it until it is fixed.
const noClusterSuffix = " Argo CD has no cluster for this environment until this is fixed."

// condition is ConnectionInitializationSucceeded for the outcome: True
// (Succeeded) when refusal is nil, else False with the refusal's reason.
func condition(env *v1.GitOpsDeploymentManagedEnvironment, refusal *kernel.Refusal) metav1.Condition {
	cond := metav1.Condition{
		Type:               v1.ManagedEnvironmentConditionConnectionInitializationSucceeded,
		Status:             metav1.ConditionTrue,
		Reason:             v1.ManagedEnvironmentReasonSucceeded,
		ObservedGeneration: env.Generation,
	}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, refusal.Reason, refusal.Message+noClusterSuffix
	}
	return cond
}
