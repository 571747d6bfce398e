package promotionrun

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
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

// gates returns a *kernel.Waiting when a gate of one of the Environments
// holds the run back (the first one that does), a transient error, or nil.
// snap is the Snapshot the gates decide on, nil when it does not exist.
// runs are the namespace's PromotionRuns: when the Snapshot was verified in
// a parent Environment (its soak time) is read from their steps, this run's
// own steps as they are now. A missing Environment has no gates here: the
// promotion refuses it.
func (r *Reconciler) gates(ctx context.Context, run *as.PromotionRun, runs []as.PromotionRun, envNames []string, snap *as.Snapshot) error {
	var approvals as.PromotionApprovalList
	if err := r.Client.List(ctx, &approvals, client.InNamespace(run.Namespace)); err != nil {
		return err
	}
	runs = append(runs, *run)
	for i := range runs[:len(runs)-1] {
		if runs[i].UID == run.UID {
			runs[i] = *run
		}
	}
	var previews *as.PromotionPreviewList
	var enforcement *install.Enforcement
	for _, name := range envNames {
		env, err := r.environment(ctx, run.Namespace, name)
		if env == nil {
			if err != nil {
				return err
			}
			continue
		}
		in := gateInput{Application: run.Spec.Application, Snapshot: run.Spec.Snapshot, Env: env, Approvals: approvals.Items, Now: r.now().Time, Rollback: run.Spec.IsRollback()}
		if snap != nil {
			in.SnapshotID, in.SnapshotCreated = snap.Identity(), snap.CreationTimestamp.Time
		}
		if g := env.Spec.Gates; g != nil && g.Approvals != nil {
			// Read once, and only when an Environment asks for approvals.
			if enforcement == nil {
				e, err := r.identityEnforcement(ctx)
				if err != nil {
					return err
				}
				enforcement = &e
			}
			in.Identity = *enforcement
		}
		if env.Spec.Preview != nil {
			// Read once, and only when an Environment asks for a preview.
			if previews == nil {
				previews = &as.PromotionPreviewList{}
				if err := r.Client.List(ctx, previews, client.InNamespace(run.Namespace)); err != nil {
					return err
				}
			}
			in.Previews = previews.Items
		}
		if name := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName; name != "" {
			claim := &as.DeploymentTargetClaim{}
			err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: run.Namespace, Name: name}, claim)
			switch {
			case err == nil:
				in.Claim = claim
			case !apierrors.IsNotFound(err):
				return err
			}
		}
		if p := env.Spec.ParentEnvironment; p != "" {
			if in.Parent, err = r.environment(ctx, run.Namespace, p); err != nil {
				return err
			}
			in.VerifiedInParent = verifiedAt(runs, run.Spec.Application, run.Spec.Snapshot, in.SnapshotID, p)
		}
		if w := gate(in); w != nil {
			return w
		}
	}
	return nil
}

// environment reads an Environment, confirming on the API server that a
// missing one is missing (a gate is never skipped because the cache lags):
// nil and no error when it is.
func (r *Reconciler) environment(ctx context.Context, ns, name string) (*as.Environment, error) {
	env := &as.Environment{}
	err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: ns, Name: name}, env)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return env, nil
}

// verified records when the Snapshot was verified in env (once: a step is
// verified again on each pass until its level is done).
func (r *Reconciler) verified(run *as.PromotionRun, env string) {
	for i := range run.Status.EnvironmentStatus {
		if s := &run.Status.EnvironmentStatus[i]; s.EnvironmentName == env && s.VerifiedTime == nil {
			now := r.now()
			s.VerifiedTime = &now
		}
	}
}
