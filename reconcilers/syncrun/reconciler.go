// Package syncrun reconciles GitOpsDeploymentSyncRuns: each starts one sync of
// a manual GitOpsDeployment's Application through its `.operation`, as
// `argocd app sync` does, follows it to the end and records the outcome. A run
// is started at most once; deleting a running one terminates the sync.
package syncrun

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
)

// Reconciler reconciles GitOpsDeploymentSyncRuns.
type Reconciler struct {
	Client        client.Client
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock
}

// Reconcile starts, follows or terminates one SyncRun's sync.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	run := &v1.GitOpsDeploymentSyncRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !run.DeletionTimestamp.IsZero() {
		return kernel.Outcome(ctrl.Result{}, r.reconcileDelete(ctx, run))
	}
	if run.Status.Finished() {
		return ctrl.Result{}, r.readyOnceFinished(ctx, run)
	}
	patcher := kernel.NewStatusPatcher(r.Client, run)
	result, err := r.reconcileNormal(ctx, run)
	run.Status.ObservedGeneration = run.Generation
	kernel.SetGitOpsReady(&run.Status.Conditions, err, readiness(run.Status), r.Now.Now())
	// An exception to the kernel's shape: the finalizer is added only when the
	// sync starts (a run never started has nothing to terminate), and a
	// finished run lets go of it BEFORE its outcome is written, so whoever
	// sees the outcome sees the run released (status and metadata are two
	// writes). A deferred status patch would write the outcome even when the
	// release failed; here it is skipped then, and the next pass reads the
	// outcome from the Application again (later runs wait in line meanwhile).
	if run.Status.Finished() {
		if err := kernel.RemoveFinalizer(ctx, r.Client, run, Finalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	var written error
	if patcher.Patch(ctx, run, &written); written != nil {
		return ctrl.Result{}, written
	}
	return kernel.Outcome(result, err)
}

// readyOnceFinished gives a run that finished before runs had a Ready
// condition its Ready (one status write, at the first pass after an
// upgrade); a finished run is otherwise never written again.
func (r *Reconciler) readyOnceFinished(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) error {
	if !needsReady(run) {
		return nil
	}
	patcher := kernel.NewStatusPatcher(r.Client, run)
	run.Status.ObservedGeneration = run.Generation
	kernel.SetGitOpsReady(&run.Status.Conditions, nil, readiness(run.Status), r.Now.Now())
	var err error
	patcher.Patch(ctx, run, &err)
	return err
}

// reconcileNormal reads what decides the run's next step, takes it and
// records it in run.Status.
func (r *Reconciler) reconcileNormal(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) (ctrl.Result, error) {
	gd, app, mine, err := r.read(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	var runs v1.GitOpsDeploymentSyncRunList
	if err := r.Client.List(ctx, &runs, client.InNamespace(run.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	act, why := decide(run, gd, app, mine, runs.Items)
	switch act {
	case refuse:
		kernel.SetError(r.Recorder, run, &run.Status.Conditions, kernel.AsRefusal(why), r.Now.Now())
	case queue:
		kernel.SetError(r.Recorder, run, &run.Status.Conditions, nil, r.Now.Now())
	case start:
		return ctrl.Result{}, r.start(ctx, run, gd, app)
	case follow:
		if advance(r.Recorder, run, progress(run, app, r.Now.Now())); run.Status.Phase == v1.OperationRunning {
			// Argo CD's updates requeue us; this covers a comparison that never comes.
			return ctrl.Result{RequeueAfter: kernel.PollInterval}, nil
		}
	}
	return ctrl.Result{}, why
}

// advance records p in run's status and the end of its sync as an Event.
func advance(rec record.EventRecorder, run *v1.GitOpsDeploymentSyncRun, p progressed) {
	run.Status = p.status
	switch {
	case p.ended && p.failure != "":
		kernel.Warning(rec, run, "SyncFailed", p.failure)
	case p.ended:
		rec.Event(run, corev1.EventTypeNormal, "SyncSucceeded", MsgSucceeded)
	}
}

// read reads the run's deployment, its Application (nil for one not found)
// and whether that is the Application we made for the deployment: our labels
// for it AND in the project of its tenant (tenantproject.MadeForOwner).
// Labels alone are forged by anyone who may create an Application in some
// project, and one named for the deployment (its UID is no secret) must not
// be synced, followed or terminated for its runs.
func (r *Reconciler) read(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) (*v1.GitOpsDeployment, *argov1alpha1.Application, bool, error) {
	gd, app, tenant := &v1.GitOpsDeployment{}, &argov1alpha1.Application{}, &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.GitopsDeploymentName}, gd); err != nil {
		return nil, nil, false, client.IgnoreNotFound(err)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ApplicationName(string(gd.UID))}, app); err != nil {
		return gd, nil, false, client.IgnoreNotFound(err)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: gd.Namespace}, tenant); err != nil {
		return gd, app, false, client.IgnoreNotFound(err)
	}
	return gd, app, tenantproject.MadeForOwner(app, ownership.KindGitOpsDeployment, string(gd.UID), gd.Namespace, string(tenant.UID)), nil
}

// start asks Argo CD to sync, unless another operation appeared meanwhile.
func (r *Reconciler) start(ctx context.Context, run *v1.GitOpsDeploymentSyncRun, gd *v1.GitOpsDeployment, app *argov1alpha1.Application) error {
	if err := kernel.AddFinalizer(ctx, r.Client, run, Finalizer); err != nil {
		return err
	}
	op := operation(run, gd, app)
	// As argocd-server: refuse when another operation appeared meanwhile; the
	// patch's resourceVersion makes that check and the write one step. Only
	// .operation is written: the rest of the Application is Argo CD's.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &argov1alpha1.Application{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(app), latest); err != nil {
			return err
		}
		if latest.Operation != nil {
			return kernel.Wait(reasonArgoCD, kernel.PollInterval, "the operation in progress on Argo CD Application %s", app.Name)
		}
		return patchApplication(ctx, r.Client, latest, map[string]any{"operation": op})
	})
	if err != nil {
		return fmt.Errorf("starting the sync of Application %s: %w", app.Name, err)
	}
	now := r.Now.Now()
	run.Status.StartedAt = &now
	run.Status.Phase = v1.OperationRunning
	kernel.SetError(r.Recorder, run, &run.Status.Conditions, nil, now)
	r.Recorder.Eventf(run, corev1.EventTypeNormal, "SyncStarted", "Argo CD Application %s is syncing to %s", app.Name, cmp.Or(op.Sync.Revision, "HEAD"))
	ctrl.LoggerFrom(ctx).Info("started sync", "application", app.Name, "revision", op.Sync.Revision)
	return nil
}

// reconcileDelete stops the run's operation while it runs (see
// termination), in the deployment's Application if that is ours, then
// releases the run.
func (r *Reconciler) reconcileDelete(ctx context.Context, run *v1.GitOpsDeploymentSyncRun) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if run.Status.Finished() {
			return nil
		}
		_, app, mine, err := r.read(ctx, run)
		if err != nil || !mine || termination(app, run.UID) == nil {
			return err
		}
		if err := patchApplication(ctx, r.Client, app, termination(app, run.UID)); err != nil {
			return err
		}
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "SyncTerminated", "the sync of Argo CD Application %s was terminated because the SyncRun was deleted", app.Name)
		return nil
	})
	if err != nil {
		return err
	}
	return kernel.RemoveFinalizer(ctx, r.Client, run, Finalizer)
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
