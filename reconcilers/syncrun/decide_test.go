package syncrun

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)) }

func syncRun(name string, created int, mod ...func(*v1.GitOpsDeploymentSyncRun)) v1.GitOpsDeploymentSyncRun {
	r := v1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: at(created)},
		Spec: v1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "web"}}
	for _, m := range mod {
		m(&r)
	}
	return r
}

func started(r *v1.GitOpsDeploymentSyncRun) {
	s := at(50)
	r.Status.StartedAt = &s
	r.Status.Phase = v1.OperationRunning
}
func phase(p v1.OperationPhase) func(*v1.GitOpsDeploymentSyncRun) {
	return func(r *v1.GitOpsDeploymentSyncRun) { r.Status.Phase = p }
}
func deleting(r *v1.GitOpsDeploymentSyncRun) { d := at(60); r.DeletionTimestamp = &d }
func ofDeployment(name string) func(*v1.GitOpsDeploymentSyncRun) {
	return func(r *v1.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = name }
}

// op is an operation tagged with the run's UID.
func op(uid types.UID) *argov1alpha1.Operation {
	return &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{}, Info: []*argov1alpha1.Info{{Name: InfoKey, Value: string(uid)}}}
}

// application is an Application Argo CD has compared, with mod applied.
func application(mod ...func(*argov1alpha1.Application)) *argov1alpha1.Application {
	reconciled := at(10)
	a := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "gitopsdepl-1"}}
	a.Status.ReconciledAt = &reconciled
	for _, m := range mod {
		m(a)
	}
	return a
}

func TestDecide(t *testing.T) {
	manual := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeManual}}
	automated := &v1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.GitOpsDeploymentSpec{Type: v1.GitOpsDeploymentSpecTypeAutomated}}
	me := syncRun("me", 20)
	badRevision := syncRun("me", 20, func(r *v1.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "--upload-pack=x" })
	startedMe := syncRun("me", 20, started)
	cases := map[string]struct {
		run    v1.GitOpsDeploymentSyncRun
		gd     *v1.GitOpsDeployment
		app    *argov1alpha1.Application
		notOur bool
		runs   []v1.GitOpsDeploymentSyncRun
		want   action
		// refusal: the message it has, reason: its Event's; waiting: the reason.
		refusal, reason, waiting, blocker string
	}{
		"no deployment": {run: me, want: refuse, refusal: "Unable to retrieve GitOpsDeployment 'web' referenced by the GitOpsDeploymentSyncRun", reason: ReasonGitOpsDeploymentNotFound},
		"an automated deployment": {run: me, gd: automated, app: application(), want: refuse,
			refusal: "invalid GitOpsDeploymentSyncRun 'me'. Syncing a GitOpsDeployment with Automated sync policy is not allowed", reason: ReasonDeploymentAutomated},
		"a revision that is an option": {run: badRevision, gd: manual, app: application(), want: refuse, refusal: "spec.revisionId: ", reason: ReasonInvalidRevision},
		"the Application not made yet": {run: me, gd: manual, want: await, waiting: reasonApplication},
		"a look-alike Application":     {run: me, gd: manual, app: application(), notOur: true, want: refuse, refusal: "is not the one of GitOpsDeployment 'web'", reason: ReasonApplicationNotOurs},
		"first in line, Argo CD idle":  {run: me, gd: manual, app: application(), runs: []v1.GitOpsDeploymentSyncRun{me}, want: start},
		"not compared yet":             {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) { a.Status.ReconciledAt = nil }), want: queue, waiting: reasonArgoCD},
		"the spec is invalid to Argo CD": {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) {
			a.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionInvalidSpecError}}
		}), want: queue, waiting: reasonArgoCD},
		"another operation requested": {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) { a.Operation = op("someone") }),
			want: queue, waiting: reasonArgoCD},
		"another operation running": {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: synccommon.OperationRunning}
		}), want: queue, waiting: reasonArgoCD},
		"an older run waits": {run: me, gd: manual, app: application(), runs: []v1.GitOpsDeploymentSyncRun{syncRun("older", 10), me},
			want: queue, waiting: reasonInLine},
		"a younger run started does not hold it (Argo CD's operation would)": {run: me, gd: manual, app: application(),
			runs: []v1.GitOpsDeploymentSyncRun{me, syncRun("younger", 30, started)}, want: start},
		"the oldest waiting run is named": {run: me, gd: manual, app: application(), runs: []v1.GitOpsDeploymentSyncRun{syncRun("b", 12), syncRun("a", 11), me},
			want: queue, waiting: reasonInLine, blocker: "a"},
		"older runs finished, deleted or of another deployment": {run: me, gd: manual, app: application(), runs: []v1.GitOpsDeploymentSyncRun{
			syncRun("done", 1, phase(v1.OperationSucceeded)), syncRun("failed", 2, phase(v1.OperationFailed)), syncRun("gone", 3, deleting),
			syncRun("other", 4, ofDeployment("api")), me, syncRun("younger", 30)}, want: start},
		"same second: by name": {run: me, gd: manual, app: application(), runs: []v1.GitOpsDeploymentSyncRun{syncRun("ma", 20), me},
			want: queue, waiting: reasonInLine},
		"started by this run (status write lost)": {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) { a.Operation = op(me.UID) }), want: follow},
		"started by this run, operation picked up": {run: me, gd: manual, app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(me.UID), Phase: synccommon.OperationRunning}
		}), want: follow},
		"started, however busy Argo CD is": {run: startedMe, gd: manual, app: application(func(a *argov1alpha1.Application) { a.Operation = op("someone") }), want: follow},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			act, why := decide(&tc.run, tc.gd, tc.app, !tc.notOur, tc.runs)
			assert.Equal(t, tc.want, act)
			switch {
			case tc.refusal != "":
				require.NotNil(t, kernel.AsRefusal(why), "%v", why)
				assert.Contains(t, kernel.AsRefusal(why).Message, tc.refusal)
				assert.Equal(t, tc.reason, kernel.AsRefusal(why).Reason)
				assert.Equal(t, string(v1.GitOpsDeploymentReasonErrorOccurred), kernel.AsRefusal(why).ConditionReason(), "the seed's condition keeps ErrorOccurred")
			case tc.waiting != "":
				require.NotNil(t, kernel.AsWaiting(why), "%v", why)
				assert.Equal(t, tc.waiting, kernel.AsWaiting(why).Reason)
				assert.Equal(t, kernel.PollInterval, kernel.AsWaiting(why).After)
				if tc.blocker != "" {
					assert.Equal(t, "GitOpsDeploymentSyncRun "+tc.blocker+" to finish", kernel.AsWaiting(why).For)
				}
			default:
				assert.NoError(t, why)
			}
		})
	}
}

func TestOperation(t *testing.T) {
	gd := &v1.GitOpsDeployment{Spec: v1.GitOpsDeploymentSpec{Source: v1.ApplicationSource{TargetRevision: "main"}}}
	withOptions := application(func(a *argov1alpha1.Application) {
		a.Spec.SyncPolicy = &argov1alpha1.SyncPolicy{SyncOptions: argov1alpha1.SyncOptions{"CreateNamespace=true"}}
	})
	run := syncRun("me", 1)
	o := operation(&run, gd, withOptions)
	assert.Equal(t, "main", o.Sync.Revision, "the deployment's revision by default")
	assert.Equal(t, argov1alpha1.SyncOptions{"CreateNamespace=true"}, o.Sync.SyncOptions)
	assert.Equal(t, Initiator, o.InitiatedBy.Username)
	assert.True(t, ours(o, run.UID))
	run.Spec.RevisionID = "v1.2"
	assert.Equal(t, "v1.2", operation(&run, gd, application()).Sync.Revision)
	assert.Nil(t, operation(&run, gd, application()).Sync.SyncOptions)
}

func TestProgress(t *testing.T) {
	run := syncRun("me", 1)
	finished := func(p synccommon.OperationPhase, finishedAt, reconciledAt int, sync argov1alpha1.SyncStatusCode) *argov1alpha1.Application {
		return application(func(a *argov1alpha1.Application) {
			f, r := at(finishedAt), at(reconciledAt)
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(run.UID), Phase: p, Message: "boom", FinishedAt: &f,
				SyncResult: &argov1alpha1.SyncOperationResult{Revision: "abc"}}
			a.Status.ReconciledAt = &r
			a.Status.Sync = argov1alpha1.SyncStatus{Status: sync, Revision: "abc"}
			a.Status.Health.Status = health.HealthStatusHealthy
		})
	}
	cases := map[string]struct {
		app       *argov1alpha1.Application
		now       int
		phase     v1.OperationPhase
		errorMsg  string // of a True ErrorOccurred
		event     string
		sync      v1.SyncStatusCode
		revision  string
		succeeded bool
		// runRevision: the run's spec.revisionId (another than the deployment's target).
		runRevision string
	}{
		"not picked up yet": {app: application(func(a *argov1alpha1.Application) { a.Operation = op(run.UID) }), now: 100, phase: v1.OperationRunning},
		"another run's operation": {app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op("x"), Phase: synccommon.OperationSucceeded}
		}), now: 100, phase: v1.OperationRunning},
		"succeeded, compared since": {app: finished(synccommon.OperationSucceeded, 100, 101, argov1alpha1.SyncStatusCodeOutOfSync), now: 102, phase: v1.OperationSucceeded, event: "Normal SyncSucceeded " + MsgSucceeded, sync: "OutOfSync", revision: "abc", succeeded: true},
		"succeeded, Synced at it":   {app: finished(synccommon.OperationSucceeded, 100, 100, argov1alpha1.SyncStatusCodeSynced), now: 100, phase: v1.OperationSucceeded, event: "Normal SyncSucceeded " + MsgSucceeded, sync: "Synced", revision: "abc", succeeded: true},
		// Argo CD's operation reports a sync to another revision Synced at it; only
		// the comparison after it says OutOfSync with the target.
		"another revision, Synced at it, not compared yet": {app: finished(synccommon.OperationSucceeded, 100, 100, argov1alpha1.SyncStatusCodeSynced), now: 101, phase: v1.OperationRunning, runRevision: "abc"},
		"another revision, compared since": {app: finished(synccommon.OperationSucceeded, 100, 101, argov1alpha1.SyncStatusCodeOutOfSync), now: 102, phase: v1.OperationSucceeded,
			event: "Normal SyncSucceeded " + MsgSucceeded, sync: "OutOfSync", revision: "abc", succeeded: true, runRevision: "abc"},
		"another revision, reconciled later but still Synced at it": {app: finished(synccommon.OperationSucceeded, 100, 101, argov1alpha1.SyncStatusCodeSynced), now: 102, phase: v1.OperationRunning, runRevision: "abc"},
		"another revision, Synced at it until compareWait": {app: finished(synccommon.OperationSucceeded, 100, 101, argov1alpha1.SyncStatusCodeSynced), now: 100 + int(compareWait/time.Second) + 1,
			phase: v1.OperationSucceeded, event: "Normal SyncSucceeded " + MsgSucceeded, sync: "Synced", revision: "abc", succeeded: true, runRevision: "abc"},
		"succeeded, not compared yet": {app: finished(synccommon.OperationSucceeded, 100, 100, argov1alpha1.SyncStatusCodeOutOfSync), now: 110, phase: v1.OperationRunning},
		"succeeded, comparison never came": {app: finished(synccommon.OperationSucceeded, 100, 100, argov1alpha1.SyncStatusCodeOutOfSync), now: 100 + int(compareWait/time.Second) + 1,
			phase: v1.OperationSucceeded, event: "Normal SyncSucceeded " + MsgSucceeded, sync: "OutOfSync", revision: "abc", succeeded: true},
		"failed": {app: finished(synccommon.OperationFailed, 100, 101, argov1alpha1.SyncStatusCodeOutOfSync), now: 101, phase: v1.OperationFailed,
			errorMsg: "The synchronize operation Failed: boom", event: "Warning SyncFailed The synchronize operation Failed: boom", sync: "OutOfSync", revision: "abc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := run.DeepCopy()
			run.Spec.RevisionID = tc.runRevision
			rec := record.NewFakeRecorder(5)
			given, app := run.DeepCopy(), tc.app.DeepCopy()
			p := progress(run, tc.app, at(tc.now))
			assert.Equal(t, given, run, "progress is pure: the run is left as it was")
			assert.Equal(t, app, tc.app, "progress is pure: the Application is left as it was")
			assert.Equal(t, tc.phase == v1.OperationSucceeded || tc.phase == v1.OperationFailed, p.ended)
			advance(rec, run, p)
			assert.Equal(t, tc.phase, run.Status.Phase)
			require.NotNil(t, run.Status.StartedAt, "a run followed has started")
			assert.Equal(t, tc.errorMsg, kernel.ErrorMessage(run.Status.Conditions))
			assert.Equal(t, tc.sync, run.Status.SyncStatus)
			assert.Equal(t, tc.revision, run.Status.Revision)
			assert.Equal(t, tc.phase == v1.OperationSucceeded || tc.phase == v1.OperationFailed, run.Status.Finished())
			if tc.succeeded {
				assert.Equal(t, v1.HealthStatusCode(health.HealthStatusHealthy), run.Status.Health)
				require.Len(t, run.Status.Conditions, 1)
				assert.Equal(t, MsgSucceeded, run.Status.Conditions[0].Message)
				assert.Equal(t, v1.GitOpsConditionStatusFalse, run.Status.Conditions[0].Status)
			}
			close(rec.Events)
			var events []string
			for e := range rec.Events {
				events = append(events, e)
			}
			if tc.event == "" {
				assert.Empty(t, events)
			} else {
				assert.Equal(t, []string{tc.event}, events)
			}
		})
	}
}

func TestTermination(t *testing.T) {
	me := types.UID("me")
	cases := map[string]struct {
		app  *argov1alpha1.Application
		want map[string]any
	}{
		"running": {app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(me), Phase: synccommon.OperationRunning}
		}), want: map[string]any{"status": map[string]any{"operationState": map[string]any{"phase": synccommon.OperationTerminating}}}},
		"requested, not picked up": {app: application(func(a *argov1alpha1.Application) { a.Operation = op(me) }), want: map[string]any{"operation": nil}},
		"requested again after an earlier one of ours": {app: application(func(a *argov1alpha1.Application) {
			a.Operation = op(me)
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(me), Phase: synccommon.OperationSucceeded}
		})},
		"finished": {app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(me), Phase: synccommon.OperationFailed}
		})},
		"another run's, running": {app: application(func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op("other"), Phase: synccommon.OperationRunning}
		})},
		"another run's, requested": {app: application(func(a *argov1alpha1.Application) { a.Operation = op("other") })},
		"nothing":                  {app: application()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, termination(tc.app, me))
		})
	}
}

// TestProgressTiesTheComparisonToWhatTheSyncApplied: a comparison a second
// after the operation ended may still see the live state from before the sync
// (Argo CD's cluster cache lags its writes under load). The old rule (any
// comparison in a later second) ended the run on it with the sync status of
// before; the comparison counts only once it sees what the sync applied.
func TestProgressTiesTheComparisonToWhatTheSyncApplied(t *testing.T) {
	run := syncRun("me", 1)
	cm := argov1alpha1.ResourceStatus{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "synced"}
	// The sync (to synced) applied the ConfigMap; Argo CD then compared at
	// second 101 with comparedAt, reporting the ConfigMap and the whole
	// Application with status.
	after := func(synced, comparedAt string, status argov1alpha1.SyncStatusCode) *argov1alpha1.Application {
		return application(func(a *argov1alpha1.Application) {
			f, r := at(100), at(101)
			a.Status.OperationState = &argov1alpha1.OperationState{Operation: *op(run.UID), Phase: synccommon.OperationSucceeded, FinishedAt: &f,
				SyncResult: &argov1alpha1.SyncOperationResult{Revision: synced, Resources: argov1alpha1.ResourceResults{
					{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "synced", Status: synccommon.ResultCodeSynced, Message: "configmap/synced configured"},
					{Version: "v1", Kind: "Pod", Namespace: "ns", Name: "hook", Status: synccommon.ResultCodeSynced, HookType: synccommon.HookTypePreSync}}}}
			a.Status.ReconciledAt = &r
			c := cm
			c.Status = status
			a.Status.Resources = []argov1alpha1.ResourceStatus{c}
			a.Status.Sync = argov1alpha1.SyncStatus{Status: status, Revision: comparedAt}
			a.Status.Health.Status = health.HealthStatusHealthy
		})
	}
	cases := map[string]struct {
		app         *argov1alpha1.Application
		runRevision string
		now         int
		ended       bool
		sync        v1.SyncStatusCode
	}{
		// To the target (HEAD = second): the ConfigMap still OutOfSync at it is the state before the sync.
		"to the target, a comparison that does not see the sync": {app: after("second", "second", argov1alpha1.SyncStatusCodeOutOfSync), now: 102},
		"to the target, the comparison after it":                 {app: after("second", "second", argov1alpha1.SyncStatusCodeSynced), now: 102, ended: true, sync: "Synced"},
		// To an older revision (first), the target being second: Synced with the
		// target is the state before the sync; OutOfSync with it is after.
		"to another revision, a comparison that does not see the sync": {app: after("first", "second", argov1alpha1.SyncStatusCodeSynced), runRevision: "first", now: 102},
		"to another revision, the comparison after it":                 {app: after("first", "second", argov1alpha1.SyncStatusCodeOutOfSync), runRevision: "first", now: 102, ended: true, sync: "OutOfSync"},
		"no comparison that sees it until compareWait": {app: after("first", "second", argov1alpha1.SyncStatusCodeSynced), runRevision: "first",
			now: 100 + int(compareWait/time.Second) + 1, ended: true, sync: "Synced"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := run.DeepCopy()
			run.Spec.RevisionID = tc.runRevision
			p := progress(run, tc.app, at(tc.now))
			assert.Equal(t, tc.ended, p.ended)
			if tc.ended {
				assert.Equal(t, tc.sync, p.status.SyncStatus)
			} else {
				assert.Equal(t, v1.OperationRunning, p.status.Phase)
			}
		})
	}
}
