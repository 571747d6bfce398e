package environment

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonResolved is the reason of an ErrorOccurred condition that is False
// again, as for GitOpsDeployments.
const ReasonResolved = as.EnvironmentReasonErrorOccurred + "Resolved"

// setCondition records the outcome on ErrorOccurred: True with a refusal's
// reason and message (a Warning Event when it appears or changes), False with
// a waiting's (no Event), or, once there was an error, False/
// ErrorOccurredResolved. An Environment that never failed gets no condition;
// observing the same state again writes nothing.
func (r *Reconciler) setCondition(env *as.Environment, err error) {
	cond := metav1.Condition{
		Type:               as.EnvironmentConditionErrorOccurred,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonResolved,
		ObservedGeneration: env.Generation,
	}
	if refusal := kernel.AsRefusal(err); refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, refusal.Reason, refusal.Message
	} else if w := kernel.AsWaiting(err); w != nil {
		cond.Reason, cond.Message = w.Reason, w.Error()
	} else if meta.FindStatusCondition(env.Status.Conditions, cond.Type) == nil {
		return
	}
	kernel.SetCondition(r.Recorder, env, &env.Status.Conditions, cond, r.Now.Now(), cond.Status == metav1.ConditionTrue)
}
