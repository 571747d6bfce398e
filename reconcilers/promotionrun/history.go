package promotionrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The history of an (Application, Environment) is a PromotionHistory whose
// status this reconciler alone writes: an entry per run's step there, once the
// step ended (verified or failed), so it outlives the PromotionRun.

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionhistories,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionhistories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionapprovals,verbs=get;list;watch

// HistoryName names the PromotionHistory of app in env.
func HistoryName(app, env string) string { return as.PromotionHistoryName(app, env) }

// historyEntries are the entries the run's ended steps make, by Environment.
// promotedBy is given when the API server enforced who requested the run.
func historyEntries(run *as.PromotionRun, snapshotCreated *metav1.Time, promotedBy string, now metav1.Time) map[string]as.PromotionHistoryEntry {
	kind := as.PromotionKindPromotion
	if run.Spec.IsRollback() {
		kind = as.PromotionKindRollback
	}
	out := map[string]as.PromotionHistoryEntry{}
	for _, s := range run.Status.EnvironmentStatus {
		result := as.PromotionRunCompleteResultSuccess
		switch s.Status {
		case as.PromotionRunEnvironmentStatusSuccess:
		case as.PromotionRunEnvironmentStatusFailure:
			result = as.PromotionRunCompleteResultFailure
		default:
			continue
		}
		created := run.CreationTimestamp
		out[s.EnvironmentName] = as.PromotionHistoryEntry{
			PromotionRun: run.Name, PromotionRunUID: string(run.UID), Kind: kind, Snapshot: snapshotOf(run), SnapshotIdentity: run.Status.SnapshotIdentity,
			SnapshotCreated: snapshotCreated, StartTime: &created, CompletionTime: now, Result: result, Message: s.DisplayStatus,
			PromotedBy: promotedBy,
		}
	}
	return out
}

// promotedBy is who requested the run: its spec.requestedBy, which the
// admission policy gitops-service-promotion-requesters checked against the
// identity the API server authenticated; empty (unknown) when unset, or when
// the policies did not enforce it when the run was created (e).
func promotedBy(run *as.PromotionRun, e install.Enforcement) string {
	if run.Spec.RequestedBy == nil || !enforcedAt(e, run.CreationTimestamp.Time) {
		return ""
	}
	return run.Spec.RequestedBy.User
}

// upsertEntry adds e to st unless the run already has one there (a step ends
// once), dropping the oldest beyond MaxHistoryEntries; it says whether st changed.
func upsertEntry(st *as.PromotionHistoryStatus, e as.PromotionHistoryEntry) bool {
	if slices.ContainsFunc(st.Entries, func(o as.PromotionHistoryEntry) bool { return o.PromotionRunUID == e.PromotionRunUID }) {
		return false
	}
	st.Entries = append(st.Entries, e)
	if n := len(st.Entries) - as.MaxHistoryEntries; n > 0 {
		st.Entries = st.Entries[n:]
	}
	return true
}

// recorded says whether the history already has the run's entry.
func recorded(h *as.PromotionHistory, uid string) bool {
	return h != nil && slices.ContainsFunc(h.Status.Entries, func(o as.PromotionHistoryEntry) bool { return o.PromotionRunUID == uid })
}

// promoteAndRecord moves the run on and records its ended steps in their
// histories. When recording fails, the run's status stays as it was, so that
// the next pass records again (a run is not looked at once completed).
func (r *Reconciler) promoteAndRecord(ctx context.Context, run *as.PromotionRun) (ctrl.Result, error) {
	before := run.Status.DeepCopy()
	result, err := r.promote(ctx, run)
	if kernel.Transient(err) {
		return result, err
	}
	if rerr := r.record(ctx, run); rerr != nil {
		run.Status = *before
		return ctrl.Result{}, rerr
	}
	return result, err
}

// record writes the entries of the run's ended steps, and asks for the
// automatic rollbacks of the Environments that want one.
func (r *Reconciler) record(ctx context.Context, run *as.PromotionRun) error {
	name := snapshotOf(run)
	if name == "" {
		return nil
	}
	// The Snapshot the run deployed (a re-created one of the name is not it).
	var created *metav1.Time
	snap := &as.Snapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: name}, snap); err == nil && run.Status.SnapshotIdentity.Matches(snap.Identity()) {
		created = snap.CreationTimestamp.DeepCopy()
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	entries := historyEntries(run, created, "", r.now())
	if len(entries) == 0 {
		return nil
	}
	// Who approved and requested, read once and only for an entry to write
	// (a run's pass sees its ended steps again and again).
	var enforcement *install.Enforcement
	var approvals as.PromotionApprovalList
	histories, err := r.histories(ctx, run.Namespace, run.Spec.Application)
	if err != nil {
		return err
	}
	byEnv := byEnvironment(histories)
	for env, e := range entries {
		if recorded(byEnv[env], e.PromotionRunUID) {
			continue
		}
		envObj := &as.Environment{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: env}, envObj); apierrors.IsNotFound(err) {
			continue // a step refused for a missing Environment ran nowhere
		} else if err != nil {
			return err
		}
		if enforcement == nil {
			enf, err := r.identityEnforcement(ctx)
			if err != nil {
				return err
			}
			if err := r.APIReader.List(ctx, &approvals, client.InNamespace(run.Namespace)); err != nil {
				return err
			}
			enforcement = &enf
		}
		e.PromotedBy = promotedBy(run, *enforcement)
		// The approvals the gate counts for what was deployed.
		in := gateInput{Application: run.Spec.Application, Snapshot: name, SnapshotID: run.Status.SnapshotIdentity, Env: envObj,
			Approvals: approvals.Items, Identity: *enforcement, Rollback: run.Spec.IsRollback()}
		if created != nil {
			in.SnapshotCreated = created.Time
		}
		e.ApprovedBy = approvedBy(in)
		if err := r.updateHistory(ctx, run.Namespace, run.Spec.Application, env, func(st *as.PromotionHistoryStatus) bool {
			return upsertEntry(st, e)
		}); err != nil {
			return err
		}
		if e.Result == as.PromotionRunCompleteResultFailure && e.Kind == as.PromotionKindPromotion &&
			envObj.Spec.Rollback != nil && envObj.Spec.Rollback.Automatic {
			if err := r.rollbackAutomatically(ctx, run, env); err != nil {
				return err
			}
		}
	}
	return nil
}

// rollbackAutomatically creates <run>-rollback, the rollback of the run's
// Snapshot out of env; it starts after the run (one run at a time).
func (r *Reconciler) rollbackAutomatically(ctx context.Context, run *as.PromotionRun, env string) error {
	name := run.Name + "-rollback"
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(run.Name))
		name = run.Name[:253-len("-rollback")-17] + "-" + hex.EncodeToString(sum[:8]) + "-rollback"
	}
	rb := &as.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: name, Labels: map[string]string{as.LabelApplication: run.Spec.Application, as.LabelEnvironment: env}},
		Spec: as.PromotionRunSpec{Snapshot: run.Spec.Snapshot, Application: run.Spec.Application,
			ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: true}},
	}
	if len(run.Spec.Application) > 63 {
		rb.Labels = nil // not a label value; the spec names them anyway
	}
	err := r.Client.Create(ctx, rb)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating the automatic rollback %s: %w", name, err)
	}
	r.Recorder.Eventf(run, corev1.EventTypeNormal, "RollbackRequested", "Environment %s asks for a rollback when a promotion fails: created PromotionRun %s", env, name)
	return nil
}

// histories are the PromotionHistories of app in ns.
func (r *Reconciler) histories(ctx context.Context, ns, app string) ([]as.PromotionHistory, error) {
	var list as.PromotionHistoryList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(h as.PromotionHistory) bool { return h.Spec.Application != app }), nil
}

// byEnvironment indexes an application's histories by Environment.
func byEnvironment(histories []as.PromotionHistory) map[string]*as.PromotionHistory {
	byEnv := make(map[string]*as.PromotionHistory, len(histories))
	for i := range histories {
		byEnv[histories[i].Spec.Environment] = &histories[i]
	}
	return byEnv
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
