package promotionrun

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// setWaiting turns what a pass returned into the run's one Waiting
// condition: True with the Waiting's reason and what it waits for (and until
// when) while the run does not move, removed once it moves or ends. A
// transient error says nothing and leaves it as it was. A Normal Event says
// when what the run waits for changes (a Warning for the reasons above).
func (r *Reconciler) setWaiting(run *as.PromotionRun, err error) {
	if w := kernel.AsWaiting(err); w != nil {
		c := metav1.Condition{Type: as.PromotionRunConditionWaiting, Status: metav1.ConditionTrue, Reason: w.Reason, Message: w.For, ObservedGeneration: run.Generation}
		// Not a gate but an install that lets anyone approve, or an image
		// not signed as required (or a requirement that cannot be used): a Warning.
		warn := w.Reason == as.WaitingReasonApprovalIdentityNotEnforced || w.Reason == as.WaitingReasonSignatureNotVerified
		if kernel.SetCondition(r.Recorder, run, &run.Status.Conditions, c, r.now(), warn) && !warn {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, "Waiting", "Waiting for %s", w.For)
		}
		return
	}
	if err == nil || kernel.AsRefusal(err) != nil || run.Status.State == as.PromotionRunStateCompleted {
		meta.RemoveStatusCondition(&run.Status.Conditions, as.PromotionRunConditionWaiting)
	}
}
