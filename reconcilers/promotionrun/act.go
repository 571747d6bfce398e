package promotionrun

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// act makes the writes the plan asks for, in this order: the record that
// starts a rollback (before anything deploys), the bindings, the history
// entries of the steps that ended and the automatic rollbacks they ask for,
// then the plan's Events. The run's status is not among them: Reconcile
// writes it last, and only when act succeeded. A binding the API server
// refuses fails the run there: the plan is made again with that fact and its
// remaining writes made.
func (r *Reconciler) act(ctx context.Context, w *world, d *decision) error {
	run := w.Run
	if rb := d.Rollback; rb != nil {
		if err := r.updateHistory(ctx, run.Namespace, run.Spec.Application, rb.Env, func(st *as.PromotionHistoryStatus) bool {
			return applyRollback(st, run.Name, rb.Bad, rb.BadID, w.Now)
		}); err != nil {
			return err
		}
	}
	for _, b := range d.Binds {
		err := r.bind(ctx, run, b)
		if refusal := kernel.AsRefusal(err); refusal != nil {
			w.Refused = map[string]*kernel.Refusal{b.Env: refusal}
			*d = plan(w)
			d.Rollback, d.Binds = nil, nil // written already
			break
		}
		if err != nil {
			return err
		}
	}
	for _, h := range d.Entries {
		if err := r.updateHistory(ctx, run.Namespace, run.Spec.Application, h.Env, func(st *as.PromotionHistoryStatus) bool {
			return upsertEntry(st, h.Entry)
		}); err != nil {
			return err
		}
		if h.Rollback {
			if err := r.rollbackAutomatically(ctx, run, h.Env); err != nil {
				return err
			}
		}
	}
	for _, e := range d.Events {
		r.Recorder.Event(run, corev1.EventTypeNormal, e.Reason, e.Message)
	}
	return nil
}

// bind creates or patches one binding; a binding that cannot be used is refused.
func (r *Reconciler) bind(ctx context.Context, run *as.PromotionRun, b bindWrite) error {
	if seb := b.Create; seb != nil {
		err := r.Client.Create(ctx, seb)
		if apierrors.IsAlreadyExists(err) {
			// Either our cache has not seen it yet (retry), or a binding of that
			// name deploys something else.
			existing := &as.SnapshotEnvironmentBinding{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(seb), existing); err != nil {
				return err
			}
			if existing.Spec.Application != run.Spec.Application || existing.Spec.Environment != b.Env {
				return kernel.Refuse(ReasonBindingNameTaken, "SnapshotEnvironmentBinding %s exists for Application %q and Environment %q", seb.Name,
					existing.Spec.Application, existing.Spec.Environment)
			}
			return fmt.Errorf("SnapshotEnvironmentBinding %s: %w", seb.Name, kernel.ErrStaleCache)
		}
		if apierrors.IsInvalid(err) {
			// Application and Environment names too long for a binding's name or
			// labels: no retry can help, and the run would block the application's next.
			return kernel.Refuse(ReasonBindingInvalid, "cannot create SnapshotEnvironmentBinding %s: %v", seb.Name, err)
		}
		if err != nil {
			return fmt.Errorf("creating SnapshotEnvironmentBinding %s: %w", seb.Name, err)
		}
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "BindingCreated", "Created SnapshotEnvironmentBinding %s for Environment %s", seb.Name, b.Env)
		return nil
	}
	to := b.To.DeepCopy()
	if err := r.Client.Patch(ctx, to, client.MergeFromWithOptions(b.From, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("pointing SnapshotEnvironmentBinding %s at Snapshot %s: %w", to.Name, to.Spec.Snapshot, err)
	}
	r.Recorder.Eventf(run, corev1.EventTypeNormal, "BindingUpdated", "SnapshotEnvironmentBinding %s now deploys Snapshot %s", to.Name, to.Spec.Snapshot)
	return nil
}

// rollbackAutomatically creates the rollback of the run's Snapshot out of
// env (as.NewAutomaticRollback); it starts after the run (one run at a time).
func (r *Reconciler) rollbackAutomatically(ctx context.Context, run *as.PromotionRun, env string) error {
	rb := as.NewAutomaticRollback(run, env)
	err := r.Client.Create(ctx, rb)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the automatic rollback %s: %w", rb.Name, err)
	}
	r.Recorder.Eventf(run, corev1.EventTypeNormal, "RollbackRequested", "Environment %s asks for a rollback when a promotion fails: created PromotionRun %s", env, rb.Name)
	return nil
}

// updateHistory applies mutate to the status of the history of app in env,
// creating it first, and writes it when mutate says it changed it (under the
// optimistic lock: a conflict is retried on a fresh read).
func (r *Reconciler) updateHistory(ctx context.Context, ns, app, env string, mutate func(*as.PromotionHistoryStatus) bool) error {
	h := &as.PromotionHistory{}
	key := client.ObjectKey{Namespace: ns, Name: HistoryName(app, env)}
	err := r.Client.Get(ctx, key, h)
	if apierrors.IsNotFound(err) {
		h = &as.PromotionHistory{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
			Spec:       as.PromotionHistorySpec{Application: app, Environment: env},
		}
		if len(app) <= 63 {
			h.Labels = map[string]string{as.LabelApplication: app, as.LabelEnvironment: env}
		}
		err = r.Client.Create(ctx, h)
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("PromotionHistory %s: %w", key.Name, kernel.ErrStaleCache)
		}
	}
	if err != nil {
		return err
	}
	if h.Spec.Application != app || h.Spec.Environment != env {
		return kernel.Refuse(reason, "PromotionHistory %s is of Application %q and Environment %q", h.Name, h.Spec.Application, h.Spec.Environment)
	}
	if !mutate(&h.Status) {
		return nil
	}
	return r.Client.Status().Update(ctx, h)
}
