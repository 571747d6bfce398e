package managedenvironment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// noClusterSuffix ends every failure message: a failing environment has no
// Argo CD cluster (ours is deleted), so nothing deploys to it until it is fixed.
const noClusterSuffix = " Argo CD has no cluster for this environment until this is fixed."

// setCondition records the outcome on ConnectionInitializationSucceeded: True
// (Succeeded) when refusal is nil, else False with the refusal's reason. A
// Warning Event is emitted when a failure appears or changes. The transition
// time moves only when the status flips, so observing the same state again
// writes nothing.
func (r *Reconciler) setCondition(env *v1.GitOpsDeploymentManagedEnvironment, refusal *Refusal) {
	cond := metav1.Condition{
		Type:               v1.ManagedEnvironmentConditionConnectionInitializationSucceeded,
		Status:             metav1.ConditionTrue,
		Reason:             v1.ManagedEnvironmentReasonSucceeded,
		ObservedGeneration: env.Generation,
	}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, refusal.Reason, refusal.Message+noClusterSuffix
	}
	before := meta.FindStatusCondition(env.Status.Conditions, cond.Type)
	changed := before == nil || before.Status != cond.Status || before.Reason != cond.Reason || before.Message != cond.Message
	if changed && refusal != nil {
		r.Recorder.Event(env, corev1.EventTypeWarning, cond.Reason, cond.Message)
	}
	// The time is used only when the status flips (or the condition is new).
	cond.LastTransitionTime = r.Now()
	meta.SetStatusCondition(&env.Status.Conditions, cond)
}

// patchStatus writes the status only when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, orig, env *v1.GitOpsDeploymentManagedEnvironment) error {
	if equality.Semantic.DeepEqual(orig.Status, env.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, env, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
