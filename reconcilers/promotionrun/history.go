package promotionrun

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
)

// The history of an (Application, Environment) is a PromotionHistory whose
// status this reconciler alone writes: an entry per run's step there, once the
// step ended (verified or failed), so it outlives the PromotionRun. The plan
// says which entries a pass adds (records); act writes them before the run's
// status that ends the step, so a completed run, never looked at again, has
// every entry.

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionhistories,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionhistories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionapprovals,verbs=get;list;watch

// maxVerifications is the most image verifications a history entry keeps
// (the CRD's MaxItems of verifications).
const maxVerifications = 64

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
			PromotedBy: promotedBy, Analysis: s.Analysis,
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
// once; but a step verified and then failed during its soak, digest drift,
// ends again as a failure), dropping the oldest beyond MaxHistoryEntries; it
// says whether st changed.
func upsertEntry(st *as.PromotionHistoryStatus, e as.PromotionHistoryEntry) bool {
	if i := slices.IndexFunc(st.Entries, func(o as.PromotionHistoryEntry) bool { return o.PromotionRunUID == e.PromotionRunUID }); i >= 0 {
		if o := &st.Entries[i]; o.Result == as.PromotionRunCompleteResultSuccess && e.Result == as.PromotionRunCompleteResultFailure {
			o.Result, o.Message, o.CompletionTime = e.Result, e.Message, e.CompletionTime
			return true
		}
		return false
	}
	st.Entries = append(st.Entries, e)
	if n := len(st.Entries) - as.MaxHistoryEntries; n > 0 {
		st.Entries = st.Entries[n:]
	}
	return true
}

// recorded says whether the history already has the run's entry with that
// result (a success that failed later, in its soak, is recorded again).
func recorded(h *as.PromotionHistory, uid string, result as.PromotionRunCompleteResult) bool {
	return h != nil && slices.ContainsFunc(h.Status.Entries, func(o as.PromotionHistoryEntry) bool {
		return o.PromotionRunUID == uid && (o.Result == result || o.Result == as.PromotionRunCompleteResultFailure)
	})
}

// historyWrite is the entry of a step that ended, for its Environment's
// history; Rollback: the Environment asks for an automatic rollback of it.
type historyWrite struct {
	Env      string
	Entry    as.PromotionHistoryEntry
	Rollback bool
}

// records are the history entries of run's ended steps (as planned) that
// its application's histories do not have yet, by Environment name; each
// says whether it asks for the automatic rollback of its Environment.
func records(w *world, run *as.PromotionRun) []historyWrite {
	name := snapshotOf(run)
	if name == "" {
		return nil
	}
	// The Snapshot the run deployed (a re-created one of the name is not it).
	var created *metav1.Time
	if snap := w.snapshot(name); snap != nil && run.Status.SnapshotIdentity.Matches(snap.Identity()) {
		created = snap.CreationTimestamp.DeepCopy()
	}
	entries := historyEntries(run, created, promotedBy(run, w.Identity), w.Now)
	byEnv := byEnvironment(w.Histories)
	var out []historyWrite
	for _, env := range slices.Sorted(maps.Keys(entries)) {
		e := entries[env]
		envObj := w.environment(env)
		if recorded(byEnv[env], e.PromotionRunUID, e.Result) || envObj == nil {
			continue // recorded already; or refused for a missing Environment: it ran nowhere
		}
		// The approvals the gate counts for what was deployed.
		in := gateInput{Application: run.Spec.Application, Snapshot: name, SnapshotID: run.Status.SnapshotIdentity, Env: envObj,
			Approvals: w.Approvals, Identity: w.Identity, Rollback: run.Spec.IsRollback()}
		if created != nil {
			in.SnapshotCreated = created.Time
		}
		e.ApprovedBy = approvedBy(in)
		if !run.Spec.IsRollback() {
			// The CRD keeps 64 per entry (a history keeps 50 entries): a
			// larger Snapshot records its first 64 images.
			e.Verifications = w.Signatures[env][:min(len(w.Signatures[env]), maxVerifications)]
		}
		out = append(out, historyWrite{Env: env, Entry: e, Rollback: e.Result == as.PromotionRunCompleteResultFailure && e.Kind == as.PromotionKindPromotion &&
			envObj.Spec.Rollback != nil && envObj.Spec.Rollback.Automatic})
	}
	return out
}

// byEnvironment indexes an application's histories by Environment.
func byEnvironment(histories []as.PromotionHistory) map[string]*as.PromotionHistory {
	byEnv := make(map[string]*as.PromotionHistory, len(histories))
	for i := range histories {
		byEnv[histories[i].Spec.Environment] = &histories[i]
	}
	return byEnv
}
