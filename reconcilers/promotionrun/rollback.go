package promotionrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// A rollback is a PromotionRun with spec.manualPromotion.rollback: on its first Active pass it
// picks the Snapshot to go back to (status.rollback.snapshot), rejects
// spec.snapshot for the Application and holds automated promotion out of the
// Environment, all in the (Application, Environment)'s PromotionHistory; then
// it deploys and verifies like a manual promotion. It waits for the
// Application's active run like any run (one at a time per Application).

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=create

// sameIdentity says whether two records of Snapshots of one name are of the
// same Snapshot: their identities match, or one is unknown (a record
// written before identities were, a Snapshot gone): then the name decides,
// which rejects more, never less.
func sameIdentity(a, b as.SnapshotIdentity) bool {
	return !a.Known() || !b.Known() || a.Matches(b)
}

// rejection is the rejection of snapshot (id: that object with that
// content) among the Application's histories, or nil.
func rejection(histories []as.PromotionHistory, snapshot string, id as.SnapshotIdentity) (*as.RejectedSnapshot, string) {
	for i := range histories {
		for j := range histories[i].Status.Rejected {
			if r := &histories[i].Status.Rejected[j]; r.Snapshot == snapshot && sameIdentity(r.SnapshotIdentity, id) {
				return r, histories[i].Spec.Environment
			}
		}
	}
	return nil, ""
}

// rollbackCandidates are the Snapshots an Environment may go back to, best
// first: those verified there, newest first, but bad and rejected ones, each
// once (the newest entry of a name: the Snapshot must still be that one,
// rollbackTarget).
func rollbackCandidates(h *as.PromotionHistory, bad string, histories []as.PromotionHistory) []as.PromotionHistoryEntry {
	if h == nil {
		return nil
	}
	var out []as.PromotionHistoryEntry
	for i := len(h.Status.Entries) - 1; i >= 0; i-- {
		e := h.Status.Entries[i]
		if e.Result != as.PromotionRunCompleteResultSuccess || e.Snapshot == bad ||
			slices.ContainsFunc(out, func(o as.PromotionHistoryEntry) bool { return o.Snapshot == e.Snapshot }) {
			continue
		}
		if r, _ := rejection(histories, e.Snapshot, e.SnapshotIdentity); r != nil {
			continue
		}
		out = append(out, e)
	}
	return out
}

// rollbackTarget says whether snap, the Snapshot now of candidate c's name,
// is the one verified there: a Snapshot re-created under the name was never
// verified anywhere. Entries written before identities were go by name.
func rollbackTarget(c as.PromotionHistoryEntry, snap *as.Snapshot) bool {
	return !c.SnapshotIdentity.Known() || c.SnapshotIdentity.Matches(snap.Identity())
}

// applyRollback records in st that run rolled bad (badID: that object with
// that content, unknown when it is gone) back: bad is rejected, the
// Environment is held (since now), and bad's entries say who rolled them
// back. Idempotent for one run (a pass may be retried); it says whether st changed.
func applyRollback(st *as.PromotionHistoryStatus, run, bad string, badID as.SnapshotIdentity, now metav1.Time) bool {
	changed := false
	if !slices.ContainsFunc(st.Rejected, func(r as.RejectedSnapshot) bool { return r.Snapshot == bad && r.SnapshotIdentity == badID }) {
		st.Rejected = append(st.Rejected, as.RejectedSnapshot{Snapshot: bad, SnapshotIdentity: badID, PromotionRun: run, Time: now})
		if n := len(st.Rejected) - as.MaxRejectedSnapshots; n > 0 {
			st.Rejected = st.Rejected[n:]
		}
		changed = true
	}
	if st.Hold == nil || st.Hold.PromotionRun != run {
		st.Hold = &as.PromotionHold{Since: now, PromotionRun: run, Snapshot: bad}
		changed = true
	}
	for i := range st.Entries {
		if e := &st.Entries[i]; e.Snapshot == bad && sameIdentity(e.SnapshotIdentity, badID) && e.RolledBackBy == "" && e.Kind == as.PromotionKindPromotion {
			e.RolledBackBy = run
			changed = true
		}
	}
	return changed
}

// heldParents are the Environments of level that next leaves from and that a
// rollback holds (held says which are), sorted.
func heldParents(envs []as.Environment, level, next []string, held func(env string) bool) []string {
	g := as.NewEnvironmentGraph(envs)
	var out []string
	for _, parent := range level {
		if slices.Contains(out, parent) || !held(parent) {
			continue
		}
		if slices.ContainsFunc(g.Children(parent), func(c string) bool { return slices.Contains(next, c) }) {
			out = append(out, parent)
		}
	}
	slices.Sort(out)
	return out
}

// refusal of a run whose Snapshot a rollback rejected, or nil: a rollback is
// never refused for it, a forced manual promotion neither.
func rejectedRefusal(run *as.PromotionRun, histories []as.PromotionHistory) *kernel.Refusal {
	if run.Spec.IsRollback() || (run.Spec.ManualPromotion != nil && run.Spec.ManualPromotion.Force) {
		return nil
	}
	r, env := rejection(histories, run.Spec.Snapshot, run.Status.SnapshotIdentity)
	if r == nil {
		return nil
	}
	hint := ""
	if run.Spec.ManualPromotion != nil {
		hint = "; set spec.manualPromotion.force to promote it anyway"
	}
	return kernel.Refuse(as.PromotionRunReasonSnapshotRejected, "Snapshot %s was rolled back out of Environment %s by %s at %s and is rejected for Application %s%s",
		r.Snapshot, env, r.PromotionRun, r.Time.UTC().Format(time.RFC3339), run.Spec.Application, hint)
}

// startRollback picks the Snapshot to roll back to and plans its record in
// the Environment's history (act writes it before anything is deployed); it
// refuses when there is nothing to roll back to or the Environment deploys
// something else by now (a second click: the first rollback already moved
// it), changing nothing then.
func startRollback(w *world, run *as.PromotionRun, d *decision) *kernel.Refusal {
	env, bad := run.Spec.ManualPromotion.TargetEnvironment, run.Spec.Snapshot
	if w.environment(env) == nil {
		return notFound("Environment", env)
	}
	target, targetID := "", as.SnapshotIdentity{}
	for _, c := range rollbackCandidates(byEnvironment(w.Histories)[env], bad, w.Histories) {
		if snap := w.snapshot(c.Snapshot); snap != nil && rollbackTarget(c, snap) {
			target, targetID = c.Snapshot, snap.Identity()
			break
		}
	}
	if target == "" {
		return kernel.Refuse(reason, "no Snapshot other than %s was verified in Environment %s for Application %s: nothing to roll back to", bad, env, run.Spec.Application)
	}
	if seb := binding.Of(w.Bindings, run.Spec.Application, env); seb != nil && seb.Spec.Snapshot != bad && seb.Spec.Snapshot != target {
		return kernel.Refuse(reason, "Environment %s deploys Snapshot %s of Application %s, not %s: nothing to roll back", env, seb.Spec.Snapshot, run.Spec.Application, bad)
	}
	// What is rejected is the Snapshot of that name now; gone, every one of the name.
	var badID as.SnapshotIdentity
	if snap := w.snapshot(bad); snap != nil {
		badID = snap.Identity()
	}
	d.Rollback = &rollbackRecord{Env: env, Bad: bad, BadID: badID}
	run.Status.Rollback = &as.RollbackStatus{Snapshot: target}
	run.Status.SnapshotIdentity = targetID
	d.note("RollingBack", "Rolling Environment %s back from Snapshot %s to %s; %s is rejected for Application %s and automated promotion out of %s holds until released",
		env, bad, target, bad, run.Spec.Application, env)
	return nil
}

// holdOf makes an automated run wait before it leaves a held Environment of
// level for next.
func holdOf(w *world, run *as.PromotionRun, level, next []string) *kernel.Waiting {
	if len(next) == 0 {
		return nil
	}
	byEnv := byEnvironment(w.Histories)
	held := heldParents(w.Environments, level, next, func(env string) bool { return byEnv[env].Held() })
	if len(held) == 0 {
		return nil
	}
	var why []string
	for _, env := range held {
		hold := byEnv[env].Status.Hold
		why = append(why, fmt.Sprintf("%s (rolled back by %s at %s; release: argocd gitops rollback %s --application %s --release)",
			env, hold.PromotionRun, hold.Since.UTC().Format(time.RFC3339), env, run.Spec.Application))
	}
	// A release (the history's spec) wakes the run (setup.go).
	return kernel.Wait(as.PromotionRunReasonPromotionHeld, kernel.WaitingRetry, "the hold on automated promotion out of Environment %s to be released", strings.Join(why, ", "))
}
