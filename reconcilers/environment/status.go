package environment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonResolved is the reason of an ErrorOccurred condition that is False
// again, as for GitOpsDeployments.
const ReasonResolved = as.EnvironmentReasonErrorOccurred + "Resolved"

// condition is ErrorOccurred for the outcome: True with the refusal's reason
// and message, else False/ErrorOccurredResolved.
func condition(env *as.Environment, refusal *kernel.Refusal) metav1.Condition {
	cond := metav1.Condition{
		Type:               as.EnvironmentConditionErrorOccurred,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonResolved,
		ObservedGeneration: env.Generation,
	}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, refusal.Reason, refusal.Message
	}
	return cond
}
