package syncrun

import (
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The decisions of a pass, pure functions of what was read.

// action is what one pass does with an unfinished run.
type action int

const (
	await  action = iota // for the deployment's Application; the run's status stays as it is
	queue                // in line or for Argo CD; no refusal holds any more
	refuse               // the run cannot start as it is
	start                // the run's sync
	follow               // the run's sync
)

// What a run waits for (no condition of the run shows it).
const reasonApplication, reasonInLine, reasonArgoCD = "WaitingForApplication", "WaitingInLine", "WaitingForArgoCD"

// Reasons of a run's refusals: its Warning Event's and Ready's (False); the
// ErrorOccurred condition keeps the seed's reason ErrorOccurred.
const (
	ReasonGitOpsDeploymentNotFound = "GitOpsDeploymentNotFound"
	ReasonDeploymentAutomated      = "DeploymentAutomated"
	ReasonInvalidRevision          = "InvalidRevision"
	ReasonApplicationNotOurs       = "ApplicationNotOurs"
)

// compareWait bounds how long a finished sync waits for Argo CD's next comparison.
const compareWait = 30 * time.Second

// decide says what to do with an unfinished run given its deployment (nil:
// not found), the deployment's Application (nil: not found), whether that
// Application is the one we made for the deployment, and the runs of the
// run's namespace. Anything but start and follow comes with why: a
// *kernel.Refusal or a *kernel.Waiting.
func decide(run *v1.GitOpsDeploymentSyncRun, gd *v1.GitOpsDeployment, app *argov1alpha1.Application, ours bool, runs []v1.GitOpsDeploymentSyncRun) (action, error) {
	badRevision, blocker := argocd.CheckRevision(run.Spec.RevisionID), firstBefore(run, runs)
	refusal := func(reason, format string, args ...any) error {
		return kernel.Refuse(reason, format, args...).InCondition(string(v1.GitOpsDeploymentReasonErrorOccurred))
	}
	switch {
	case gd == nil:
		// The deployment may still come: its creation requeues us.
		return refuse, refusal(ReasonGitOpsDeploymentNotFound, v1.ErrMsgSyncRunDeploymentFmt, run.Spec.GitopsDeploymentName)
	case gd.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated:
		return refuse, refusal(ReasonDeploymentAutomated, v1.ErrMsgSyncRunAutomatedFmt, run.Name)
	case badRevision != "":
		return refuse, refusal(ReasonInvalidRevision, "spec.revisionId: %s", badRevision)
	case app == nil:
		return await, kernel.Wait(reasonApplication, kernel.PollInterval, "the Argo CD Application of GitOpsDeployment %s", gd.Name)
	case !ours:
		return refuse, refusal(ReasonApplicationNotOurs, "the Argo CD Application %s is not the one of GitOpsDeployment '%s'", app.Name, gd.Name)
	case startedBy(app, run.UID) || run.Status.StartedAt != nil:
		return follow, nil
	// Earlier runs finishing, and Argo CD's operation state changing, requeue us.
	case blocker != nil:
		return queue, kernel.Wait(reasonInLine, kernel.PollInterval, "GitOpsDeploymentSyncRun %s to finish", blocker.Name)
	case !compared(app) || app.Operation != nil || (app.Status.OperationState != nil && !app.Status.OperationState.Phase.Completed()):
		return queue, kernel.Wait(reasonArgoCD, kernel.PollInterval, "Argo CD to compare Argo CD Application %s and finish its operation", app.Name)
	}
	return start, nil
}

// firstBefore is the oldest unfinished run of the same deployment created
// before this one, or nil: runs go one after another, in creation order.
func firstBefore(run *v1.GitOpsDeploymentSyncRun, runs []v1.GitOpsDeploymentSyncRun) *v1.GitOpsDeploymentSyncRun {
	var first *v1.GitOpsDeploymentSyncRun
	for i := range runs {
		o := &runs[i]
		if o.Spec.GitopsDeploymentName == run.Spec.GitopsDeploymentName && !o.Status.Finished() && o.DeletionTimestamp.IsZero() &&
			kernel.Older(o, run) && (first == nil || kernel.Older(o, first)) {
			first = o
		}
	}
	return first
}

// operation is the sync a run asks Argo CD for, as `argocd app sync` does:
// the run's revision or the deployment's, with the Application's sync
// options, tagged with the run's UID.
func operation(run *v1.GitOpsDeploymentSyncRun, gd *v1.GitOpsDeployment, app *argov1alpha1.Application) *argov1alpha1.Operation {
	revision := run.Spec.RevisionID
	if revision == "" {
		revision = gd.Spec.Source.TargetRevision
	}
	op := &argov1alpha1.Operation{
		Sync:        &argov1alpha1.SyncOperation{Revision: revision},
		InitiatedBy: argov1alpha1.OperationInitiator{Username: Initiator},
		Info:        []*argov1alpha1.Info{{Name: InfoKey, Value: string(run.UID)}},
	}
	if app.Spec.SyncPolicy != nil {
		op.Sync.SyncOptions = app.Spec.SyncPolicy.SyncOptions
	}
	return op
}

// progressed is what the Application says of a run being followed: the
// run's status from now on and, once its sync ended, how.
type progressed struct {
	status v1.GitOpsDeploymentSyncRunStatus
	// ended: the sync ended (status.Phase says how); failure is the message
	// of one that did not succeed.
	ended   bool
	failure string
}

// progress is the state of the run's sync read from the Application.
func progress(run *v1.GitOpsDeploymentSyncRun, app *argov1alpha1.Application, now metav1.Time) progressed {
	p := progressed{status: *run.Status.DeepCopy()}
	if p.status.StartedAt == nil {
		// Started by an earlier incarnation of the sidecar whose status write was lost.
		p.status.StartedAt = &now
	}
	st := app.Status.OperationState
	if st == nil || !ours(&st.Operation, run.UID) || !st.Phase.Completed() || !comparedSince(app, st, run.Spec.RevisionID != "", now) {
		p.status.Phase = v1.OperationRunning
		return p
	}
	p.ended = true
	p.status.Phase = v1.OperationPhase(st.Phase)
	if st.SyncResult != nil {
		p.status.Revision = st.SyncResult.Revision
	}
	p.status.SyncStatus = v1.SyncStatusCode(app.Status.Sync.Status)
	p.status.Health = v1.HealthStatusCode(app.Status.Health.Status)
	if st.Phase == synccommon.OperationSucceeded {
		p.status.Conditions = v1.SetCondition(p.status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
			v1.GitOpsConditionStatusFalse, v1.GitOpsDeploymentReasonErrorOccurred, MsgSucceeded, now)
		return p
	}
	p.failure = "The synchronize operation " + string(st.Phase) + ": " + st.Message
	p.status.Conditions = v1.SetCondition(p.status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
		v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentReasonErrorOccurred, p.failure, now)
	return p
}

// termination is the change to the Application that stops the run's
// operation, as `argocd app terminate-op` does: an operation not yet picked
// up is withdrawn, a running one set to Terminating; nil when there is none.
func termination(app *argov1alpha1.Application, uid types.UID) map[string]any {
	st := app.Status.OperationState
	switch {
	case st != nil && ours(&st.Operation, uid) && st.Phase == synccommon.OperationRunning:
		return map[string]any{"status": map[string]any{"operationState": map[string]any{"phase": synccommon.OperationTerminating}}}
	case ours(app.Operation, uid) && (st == nil || !ours(&st.Operation, uid)):
		return map[string]any{"operation": nil}
	}
	return nil
}

// compared says whether Argo CD has compared the Application with git and
// accepts its spec (its project exists): a sync started earlier fails at once.
func compared(app *argov1alpha1.Application) bool {
	if app.Status.ReconciledAt == nil {
		return false
	}
	for _, c := range app.Status.Conditions {
		if c.Type == argov1alpha1.ApplicationConditionInvalidSpecError {
			return false
		}
	}
	return true
}

// comparedSince says whether Argo CD has compared the Application with git
// since the operation finished, so its sync status and health are those after
// the sync. The clock alone cannot say so: a comparison made a second after
// the operation ended may still see the live state from before it (Argo CD's
// cluster cache lags the sync's writes under load). So the comparison is tied
// to what the sync applied (applied):
//   - compared with the synced revision: it counts when it reports every
//     resource the sync applied Synced (the whole Application Synced at it
//     counts at once, for a sync to the deployment's own target). For a sync
//     to another revision, Synced at it is Argo CD's record of the
//     operation, not the comparison with the target: it does not count.
//   - compared with another revision (the deployment's target, after a sync
//     to another one): it counts when it reports a resource the sync applied
//     OutOfSync (a comparison that saw what the sync wrote); all of them
//     Synced with the target is what the state before the sync looked like.
//
// A comparison must also be later than the operation's end (times have
// second resolution); with nothing applied (hooks only, or no resource),
// that is all. After compareWait the Application is taken as it is.
func comparedSince(app *argov1alpha1.Application, st *argov1alpha1.OperationState, otherRevision bool, now metav1.Time) bool {
	finished := st.FinishedAt
	if finished == nil {
		return true
	}
	if !otherRevision && st.SyncResult != nil && app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Sync.Revision == st.SyncResult.Revision {
		return true
	}
	if now.Sub(finished.Time) > compareWait {
		return true
	}
	at := app.Status.ReconciledAt
	if at == nil || !at.After(finished.Time) {
		return false
	}
	if st.SyncResult == nil {
		return true
	}
	sameRevision := app.Status.Sync.Revision == st.SyncResult.Revision
	if otherRevision && sameRevision && app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced {
		return false
	}
	keys := applied(st.SyncResult)
	if len(keys) == 0 {
		return true
	}
	reported := map[resourceKey]argov1alpha1.SyncStatusCode{}
	for _, r := range app.Status.Resources {
		reported[resourceKey{r.Group, r.Kind, r.Namespace, r.Name}] = r.Status
	}
	if sameRevision {
		for _, k := range keys {
			if reported[k] != argov1alpha1.SyncStatusCodeSynced {
				return false
			}
		}
		return true
	}
	for _, k := range keys {
		if reported[k] == argov1alpha1.SyncStatusCodeOutOfSync {
			return true
		}
	}
	return false
}

// resourceKey names a resource as Argo CD's status does.
type resourceKey struct{ Group, Kind, Namespace, Name string }

// applied are the resources the sync applied: synced, not hooks.
func applied(res *argov1alpha1.SyncOperationResult) []resourceKey {
	var out []resourceKey
	for _, r := range res.Resources {
		if r != nil && r.HookType == "" && r.Status == synccommon.ResultCodeSynced {
			out = append(out, resourceKey{r.Group, r.Kind, r.Namespace, r.Name})
		}
	}
	return out
}

// startedBy says whether the Application's requested or last operation is this run's.
func startedBy(app *argov1alpha1.Application, uid types.UID) bool {
	return ours(app.Operation, uid) || (app.Status.OperationState != nil && ours(&app.Status.OperationState.Operation, uid))
}

func ours(op *argov1alpha1.Operation, uid types.UID) bool {
	if op == nil {
		return false
	}
	for _, i := range op.Info {
		if i != nil && i.Name == InfoKey && i.Value == string(uid) {
			return true
		}
	}
	return false
}
