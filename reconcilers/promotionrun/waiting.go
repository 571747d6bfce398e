package promotionrun

import (
	"slices"

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
// when what the run waits for changes.
func (r *Reconciler) setWaiting(run *as.PromotionRun, err error) {
	if w := kernel.AsWaiting(err); w != nil {
		c := metav1.Condition{Type: as.PromotionRunConditionWaiting, Status: metav1.ConditionTrue, Reason: w.Reason, Message: w.For, ObservedGeneration: run.Generation}
		// Not a gate but an install that lets anyone approve: a Warning.
		warn := w.Reason == as.WaitingReasonApprovalIdentityNotEnforced
		if kernel.SetCondition(r.Recorder, run, &run.Status.Conditions, c, r.now(), warn) && !warn {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, "Waiting", "Waiting for %s", w.For)
		}
		return
	}
	if err == nil || kernel.AsRefusal(err) != nil || run.Status.State == as.PromotionRunStateCompleted {
		meta.RemoveStatusCondition(&run.Status.Conditions, as.PromotionRunConditionWaiting)
	}
}

// gates is what holds the run back from one of the Environments names (the
// first one that does), or nil. snap is the Snapshot the gates decide on,
// nil when it does not exist. When the Snapshot was verified in a parent
// Environment (its soak time) is read from the steps of the namespace's
// runs, this run's as planned so far. A missing Environment has no gates
// here: the promotion refuses it.
func gates(w *world, run *as.PromotionRun, names []string, snap *as.Snapshot) *kernel.Waiting {
	runs := append(slices.DeleteFunc(slices.Clone(w.Runs), func(o as.PromotionRun) bool { return o.UID == run.UID }), *run)
	for _, name := range names {
		env := w.environment(name)
		if env == nil {
			continue
		}
		in := gateInput{Application: run.Spec.Application, Snapshot: run.Spec.Snapshot, Env: env, Approvals: w.Approvals, Previews: w.Previews,
			Identity: w.Identity, Now: w.Now.Time, Rollback: run.Spec.IsRollback()}
		if snap != nil {
			in.SnapshotID, in.SnapshotCreated = snap.Identity(), snap.CreationTimestamp.Time
		}
		if claim := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName; claim != "" {
			in.Claim = w.Claims[claim]
		}
		if p := env.Spec.ParentEnvironment; p != "" {
			in.Parent = w.environment(p)
			in.VerifiedInParent = verifiedAt(runs, run.Spec.Application, run.Spec.Snapshot, in.SnapshotID, p)
		}
		if wt := gate(in); wt != nil {
			return wt
		}
	}
	return nil
}
