// Package syncrun reconciles GitOpsDeploymentSyncRuns: each starts one sync of
// a manual GitOpsDeployment's Application through its `.operation`, as
// `argocd app sync` does, follows it to the end and records the outcome. A run
// is started at most once; deleting a running one terminates the sync.
package syncrun

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentsyncruns/finalizers,verbs=update
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch;update;patch,namespace=argocd
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

const (
	// Finalizer keeps a started SyncRun until its sync is finished or terminated.
	Finalizer = "managed-gitops.redhat.com/syncrun"
	// InfoKey names the operation info entry that carries the SyncRun's UID, so
	// a restarted sidecar knows a run was started even if its status write was lost.
	InfoKey = "gitops-service.syncrun"
	// Initiator is the user Argo CD shows for our syncs.
	Initiator = "gitops-service"

	// MsgSucceeded is the original service's message for a finished sync.
	MsgSucceeded = "Successfully completed synchronize operation."

	waitRetry = 2 * time.Second
	// compareWait bounds how long a finished sync waits for Argo CD's next comparison.
	compareWait = 30 * time.Second
)

// Reconciler reconciles GitOpsDeploymentSyncRuns.
type Reconciler struct {
	Client        client.Client
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock
}

// Finished says whether a run's sync is over (or the run was refused for good).
func Finished(run *v1.GitOpsDeploymentSyncRun) bool {
	switch run.Status.Phase {
	case v1.OperationSucceeded, v1.OperationFailed, v1.OperationError:
		return true
	}
	return false
}

// Reconcile starts, follows or terminates one SyncRun's sync.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	run := &v1.GitOpsDeploymentSyncRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, run)
	}
	if Finished(run) {
		return ctrl.Result{}, nil
	}
	patcher := kernel.NewStatusPatcher(r.Client, run)
	res, err := r.step(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A finished run lets go of its finalizer before its outcome shows, so
	// whoever sees the outcome sees the run released (status and metadata are
	// two writes). Should the status write fail, the next pass reads the
	// outcome from the Application again: later runs wait in line meanwhile.
	if Finished(run) {
		if err := kernel.RemoveFinalizer(ctx, r.Client, run, Finalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	if patcher.Patch(ctx, run, &err); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// step moves the run on by one state and records it in run.Status.
func (r *Reconciler) step(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) (ctrl.Result, error) {
	gd := &v1.GitOpsDeployment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.GitopsDeploymentName}, gd)
	if apierrors.IsNotFound(err) {
		// The deployment may still come: its creation requeues us.
		r.setError(run, fmt.Sprintf(v1.ErrMsgSyncRunDeploymentFmt, run.Spec.GitopsDeploymentName))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if gd.Spec.Type == v1.GitOpsDeploymentSpecTypeAutomated {
		r.setError(run, fmt.Sprintf(v1.ErrMsgSyncRunAutomatedFmt, run.Name))
		return ctrl.Result{}, nil
	}
	if msg := argocd.CheckRevision(run.Spec.RevisionID); msg != "" {
		r.setError(run, "spec.revisionId: "+msg)
		return ctrl.Result{}, nil
	}
	app := &argov1alpha1.Application{}
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ApplicationName(string(gd.UID))}, app)
	if apierrors.IsNotFound(err) {
		// The deployment's Application is being created (or the deployment is refused: its status says why).
		return ctrl.Result{RequeueAfter: waitRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if mine, err := r.made(ctx, app, gd); err != nil {
		return ctrl.Result{}, err
	} else if !mine {
		r.setError(run, fmt.Sprintf("the Argo CD Application %s is not the one of GitOpsDeployment '%s'", app.Name, gd.Name))
		return ctrl.Result{}, nil
	}
	if !startedBy(app, run.UID) && run.Status.StartedAt == nil {
		return r.start(ctx, run, gd, app)
	}
	r.follow(run, app)
	if run.Status.Phase == v1.OperationRunning {
		// Argo CD's updates requeue us; this covers a comparison that never comes.
		return ctrl.Result{RequeueAfter: waitRetry}, nil
	}
	return ctrl.Result{}, nil
}

// made says whether app is the Application we made for gd: our labels for
// gd AND in the project of gd's tenant (tenantproject.MadeFor). Labels alone
// are forged by anyone who may create an Application in some project, and
// one named for gd (its UID is no secret) must not be synced, followed or
// terminated for gd's runs.
func (r *Reconciler) made(ctx context.Context, app *argov1alpha1.Application, gd *v1.GitOpsDeployment) (bool, error) {
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: gd.Namespace}, tenant); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return tenantproject.MadeForOwner(app, ownership.KindGitOpsDeployment, string(gd.UID), gd.Namespace, string(tenant.UID)), nil
}

// start asks Argo CD to sync when this run's turn has come and no other
// operation is in progress.
func (r *Reconciler) start(ctx context.Context, run *v1.GitOpsDeploymentSyncRun, gd *v1.GitOpsDeployment, app *argov1alpha1.Application) (ctrl.Result, error) {
	first, err := r.firstInLine(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !first || !compared(app) || app.Operation != nil || (app.Status.OperationState != nil && !app.Status.OperationState.Phase.Completed()) {
		// Earlier runs finishing, and Argo CD's operation state changing, requeue us.
		r.clearError(run)
		return ctrl.Result{RequeueAfter: waitRetry}, nil
	}
	if err := kernel.AddFinalizer(ctx, r.Client, run, Finalizer); err != nil {
		return ctrl.Result{}, err
	}
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
	// As argocd-server: refuse when another operation appeared meanwhile; the
	// patch's resourceVersion makes that check and the write one step. Only
	// .operation is written: the rest of the Application is Argo CD's.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &argov1alpha1.Application{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(app), latest); err != nil {
			return err
		}
		if latest.Operation != nil {
			return errBusy
		}
		return patchApplication(ctx, r.Client, latest, map[string]any{"operation": op})
	})
	if err == errBusy {
		return ctrl.Result{RequeueAfter: waitRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("starting the sync of Application %s: %w", app.Name, err)
	}
	now := r.now()
	run.Status.StartedAt = &now
	run.Status.Phase = v1.OperationRunning
	r.clearError(run)
	r.Recorder.Eventf(run, corev1.EventTypeNormal, "SyncStarted", "Argo CD Application %s is syncing to %s", app.Name, revisionName(revision))
	ctrl.LoggerFrom(ctx).Info("started sync", "application", app.Name, "revision", revision)
	return ctrl.Result{}, nil
}

var errBusy = fmt.Errorf("another operation is in progress")

func revisionName(rev string) string {
	if rev == "" {
		return "HEAD"
	}
	return rev
}

// follow records the state of this run's sync from the Application.
func (r *Reconciler) follow(run *v1.GitOpsDeploymentSyncRun, app *argov1alpha1.Application) {
	if run.Status.StartedAt == nil {
		// Started by an earlier incarnation of the sidecar whose status write was lost.
		now := r.now()
		run.Status.StartedAt = &now
	}
	st := app.Status.OperationState
	if st == nil || !ours(&st.Operation, run.UID) || !st.Phase.Completed() || !comparedSince(app, st, r.now()) {
		run.Status.Phase = v1.OperationRunning
		return
	}
	run.Status.Phase = v1.OperationPhase(st.Phase)
	if st.SyncResult != nil {
		run.Status.Revision = st.SyncResult.Revision
	}
	run.Status.SyncStatus = v1.SyncStatusCode(app.Status.Sync.Status)
	run.Status.Health = v1.HealthStatusCode(app.Status.Health.Status)
	if st.Phase == synccommon.OperationSucceeded {
		run.Status.Conditions = v1.SetCondition(run.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
			v1.GitOpsConditionStatusFalse, v1.GitOpsDeploymentReasonErrorOccurred, MsgSucceeded, r.now())
		r.Recorder.Event(run, corev1.EventTypeNormal, "SyncSucceeded", MsgSucceeded)
		return
	}
	msg := "The synchronize operation " + string(st.Phase) + ": " + st.Message
	run.Status.Conditions = v1.SetCondition(run.Status.Conditions, v1.GitOpsDeploymentConditionErrorOccurred,
		v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentReasonErrorOccurred, msg, r.now())
	r.Recorder.Event(run, corev1.EventTypeWarning, "SyncFailed", msg)
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
// the sync: it reports Synced at the synced revision, or compared in a later
// second (times have second resolution); after compareWait it is taken as it is.
func comparedSince(app *argov1alpha1.Application, st *argov1alpha1.OperationState, now metav1.Time) bool {
	finished := st.FinishedAt
	if finished == nil {
		return true
	}
	if st.SyncResult != nil && app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Sync.Revision == st.SyncResult.Revision {
		return true
	}
	at := app.Status.ReconciledAt
	return (at != nil && at.After(finished.Time)) || now.Sub(finished.Time) > compareWait
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

// firstInLine says whether no earlier unfinished run of the same deployment
// waits before this one: runs go one after another, in creation order.
func (r *Reconciler) firstInLine(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) (bool, error) {
	var list v1.GitOpsDeploymentSyncRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(run.Namespace)); err != nil {
		return false, err
	}
	var waiting []*v1.GitOpsDeploymentSyncRun
	for i := range list.Items {
		o := &list.Items[i]
		if o.Spec.GitopsDeploymentName == run.Spec.GitopsDeploymentName && !Finished(o) && o.DeletionTimestamp.IsZero() {
			waiting = append(waiting, o)
		}
	}
	sort.Slice(waiting, func(i, j int) bool { return before(waiting[i], waiting[j]) })
	for _, o := range waiting {
		if o.UID == run.UID {
			return true, nil
		}
		if o.Status.StartedAt != nil || before(o, run) {
			return false, nil
		}
	}
	return true, nil
}

func before(a, b *v1.GitOpsDeploymentSyncRun) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// finalize terminates the run's sync if it is still running, then releases the run.
func (r *Reconciler) finalize(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) error {
	if !controllerutil.ContainsFinalizer(run, Finalizer) {
		return nil
	}
	if !Finished(run) {
		if err := r.terminate(ctx, run); err != nil {
			return err
		}
	}
	return kernel.RemoveFinalizer(ctx, r.Client, run, Finalizer)
}

// terminate stops this run's operation as `argocd app terminate-op` does: an
// operation not yet picked up is withdrawn, a running one set to Terminating.
func (r *Reconciler) terminate(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) error {
	gd := &v1.GitOpsDeployment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.GitopsDeploymentName}, gd); err != nil {
		return client.IgnoreNotFound(err)
	}
	key := types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ApplicationName(string(gd.UID))}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &argov1alpha1.Application{}
		if err := r.Client.Get(ctx, key, app); err != nil {
			return client.IgnoreNotFound(err)
		}
		if mine, err := r.made(ctx, app, gd); err != nil || !mine {
			return err
		}
		st := app.Status.OperationState
		var change map[string]any
		switch {
		case st != nil && ours(&st.Operation, run.UID) && st.Phase == synccommon.OperationRunning:
			change = map[string]any{"status": map[string]any{"operationState": map[string]any{"phase": synccommon.OperationTerminating}}}
		case ours(app.Operation, run.UID) && (st == nil || !ours(&st.Operation, run.UID)):
			change = map[string]any{"operation": nil}
		default:
			return nil
		}
		if err := patchApplication(ctx, r.Client, app, change); err != nil {
			return err
		}
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "SyncTerminated", "the sync of Argo CD Application %s was terminated because the SyncRun was deleted", app.Name)
		return nil
	})
}

// patchApplication writes change into the Application as a merge patch, only
// if it is still the version read (a conflict otherwise): fields we do not
// set, including those our Argo CD types do not know, are left alone.
func patchApplication(ctx context.Context, c client.Client, app *argov1alpha1.Application, change map[string]any) error {
	change["metadata"] = map[string]any{"resourceVersion": app.ResourceVersion}
	raw, err := json.Marshal(change)
	if err != nil {
		return err
	}
	return c.Patch(ctx, app, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(kernel.FieldManager))
}

// setError records a refusal: ErrorOccurred True and a Warning Event when new.
func (r *Reconciler) setError(run *v1.GitOpsDeploymentSyncRun, msg string) {
	kernel.SetError(r.Recorder, run, &run.Status.Conditions, msg, r.now())
}

// clearError resolves an earlier refusal (e.g. the deployment now exists).
func (r *Reconciler) clearError(run *v1.GitOpsDeploymentSyncRun) {
	kernel.SetError(r.Recorder, run, &run.Status.Conditions, "", r.now())
}

func (r *Reconciler) now() metav1.Time { return r.Now.Now() }
