package environment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// ReasonResolved is the reason of an ErrorOccurred condition that is False
// again, as for GitOpsDeployments.
const ReasonResolved = as.EnvironmentReasonErrorOccurred + "Resolved"

// setCondition records the outcome on ErrorOccurred: True with the refusal's
// reason and message, or, once there was an error, False/ErrorOccurredResolved.
// A Warning Event is emitted when an error appears or changes. An Environment
// that never failed gets no condition; observing the same state again writes
// nothing.
func (r *Reconciler) setCondition(env *as.Environment, refusal *Refusal) {
	before := meta.FindStatusCondition(env.Status.Conditions, as.EnvironmentConditionErrorOccurred)
	cond := metav1.Condition{
		Type:               as.EnvironmentConditionErrorOccurred,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonResolved,
		ObservedGeneration: env.Generation,
	}
	if refusal != nil && refusal.waiting {
		cond.Reason, cond.Message = refusal.Reason, refusal.Message
	} else if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, refusal.Reason, refusal.Message
		if before == nil || before.Status != cond.Status || before.Reason != cond.Reason || before.Message != cond.Message {
			r.Recorder.Event(env, corev1.EventTypeWarning, cond.Reason, cond.Message)
		}
	} else if before == nil {
		return
	}
	// The time is used only when the status flips (or the condition is new).
	cond.LastTransitionTime = r.Now()
	meta.SetStatusCondition(&env.Status.Conditions, cond)
}

// patchStatus writes the status only when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, orig, env *as.Environment) error {
	if equality.Semantic.DeepEqual(orig.Status, env.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, env, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
