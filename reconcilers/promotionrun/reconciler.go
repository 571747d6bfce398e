// Package promotionrun reconciles PromotionRuns: it points the binding of the
// Application and each target Environment at the Snapshot and follows the
// generated Argo CD Applications until every component runs the Snapshot's
// image, Synced and Healthy; an automated promotion then goes on breadth first
// along the Environment digraph.
package promotionrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots;environments;applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=promotionapprovals;promotionpreviews;deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=applications,verbs=get;list;watch,namespace=argocd
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

const (
	// DefaultTimeout is how long the promotion to one Environment may take (the
	// original service's limit for a run).
	DefaultTimeout = 10 * time.Minute
	// BindingSuffix names the binding a promotion creates: <app>-<env>-generated-binding.
	BindingSuffix = "-generated-binding"
	// msgSuccess is the original service's message for a deployed step.
	msgSuccess = "All GitOpsDeployments are Synced/Healthy"
	// reason is the ErrorOccurred condition's only one (the seed's); the
	// Warning Event says which failure it is (Reason*).
	reason = as.PromotionRunReasonErrorOccurred
)

// Reasons of a failed run's Warning Event (README "Ready"). A missing input is
// <Kind>NotFound (SnapshotNotFound, ApplicationNotFound, EnvironmentNotFound).
const (
	ReasonSnapshotOfAnotherApplication = "SnapshotOfAnotherApplication"
	ReasonBindingNameTaken             = "BindingNameTaken"
	ReasonBindingInvalid               = "BindingInvalid"
	ReasonTimedOut                     = "PromotionTimedOut"
	// ReasonSnapshotReplaced: the Snapshot of the run's name is not the one
	// (UID, content) the run started with.
	ReasonSnapshotReplaced = "SnapshotReplaced"
)

// Reconciler reconciles PromotionRuns.
type Reconciler struct {
	Client client.Client
	// APIReader reads uncached: who is active is decided on the API server's
	// state, not on a cache that may lag behind another run's start.
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Timeout per Environment promoted to; DefaultTimeout when zero.
	Timeout time.Duration
	// Now is the clock; tests may set it.
	Now kernel.Clock
	// ServiceAccount is the sidecar's own: the admission policies must name
	// it as their parameter for approvals and requesters to count (identity.go).
	ServiceAccount install.ServiceAccount

	enforcementMu  sync.Mutex
	lastUnenforced time.Time

	// starting serializes the start of runs of one application (key ns/app),
	// so two runs never both become Active.
	starting sync.Map
}

func (r *Reconciler) now() metav1.Time { return r.Now.Now() }

func (r *Reconciler) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

// Reconcile starts a run when it is its application's turn and moves it on.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	run := &as.PromotionRun{}
	if err := r.Client.Get(ctx, req.NamespacedName, run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if run.Status.State == as.PromotionRunStateCompleted && run.DeletionTimestamp.IsZero() && meta.FindStatusCondition(run.Status.Conditions, kernel.ConditionReady) == nil {
		// Completed before runs had a Ready condition (a sidecar upgrade):
		// one status write gives it; a completed run is otherwise done.
		patcher := kernel.NewStatusPatcher(r.Client, run)
		defer patcher.Patch(ctx, run, &err)
		run.Status.ObservedGeneration = run.Generation
		kernel.SetReady(&run.Status.Conditions, nil, readiness(run.Status), run.Generation, r.now())
		return ctrl.Result{}, nil
	}
	if run.Status.State == as.PromotionRunStateCompleted || !run.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	starting := run.Status.State != as.PromotionRunStateActive
	if starting {
		// Who starts is decided and written under a per-application lock:
		// deferred first, it is released after the status patch below.
		defer r.lock(run)()
	}
	// The optimistic lock makes a status decided on an old copy of the run
	// fail, above all a start: two runs never both become Active.
	patcher := kernel.NewStatusPatcher(r.Client, run).WithOptimisticLock()
	defer patcher.Patch(ctx, run, &err)
	result := ctrl.Result{Requeue: true}
	if starting {
		// The start is written before anything is promoted: the next pass promotes.
		err = r.start(ctx, run)
	} else {
		result, err = r.promoteAndRecord(ctx, run)
	}
	run.Status.ObservedGeneration = run.Generation
	r.setWaiting(run, err)
	kernel.SetReady(&run.Status.Conditions, err, readiness(run.Status), run.Generation, r.now())
	return kernel.Outcome(result, err)
}

// lock takes the lock of the run's application (key ns/app) and returns its release.
func (r *Reconciler) lock(run *as.PromotionRun) func() {
	mu, _ := r.starting.LoadOrStore(run.Namespace+"/"+run.Spec.Application, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// start makes the run Active when no run of its application holds it up
// (see blocker), decided on the API server's list of runs; else the run waits.
func (r *Reconciler) start(ctx context.Context, run *as.PromotionRun) error {
	var list as.PromotionRunList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(run.Namespace)); err != nil {
		return err
	}
	if b := blocker(run, list.Items); b != "" {
		run.Status.State = as.PromotionRunStateWaiting
		// Its completion or deletion wakes this run (setup.go).
		return kernel.Wait(as.WaitingReasonRunActive, kernel.WaitingRetry, "PromotionRun %s of Application %s to complete", b, run.Spec.Application)
	}
	// The gates of the first Environment, decided on the API server's runs
	// (when the Snapshot was verified in its parent) and on the Snapshot as
	// it is now, whose identity the run keeps (a missing one: the promotion
	// refuses it).
	snap := &as.Snapshot{}
	if err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.Snapshot}, snap); apierrors.IsNotFound(err) {
		snap = nil
	} else if err != nil {
		return err
	}
	if err := r.gates(ctx, run, list.Items, []string{first(run)}, snap); err != nil {
		if kernel.AsWaiting(err) != nil {
			run.Status.State = as.PromotionRunStateWaiting
		}
		return err
	}
	run.Status.State = as.PromotionRunStateActive
	run.Status.PromotionStartTime = r.now()
	if snap != nil && !run.Spec.IsRollback() {
		// What the gates let in; a rollback records the Snapshot it returns to.
		run.Status.SnapshotIdentity = snap.Identity()
	}
	return nil
}

// promote moves an Active run on: it checks its inputs, binds the current
// step's Environments to the Snapshot, and records how far they are.
func (r *Reconciler) promote(ctx context.Context, run *as.PromotionRun) (ctrl.Result, error) {
	if err := r.checkRollback(ctx, run); err != nil {
		return r.fail(run, err)
	}
	snap := &as.Snapshot{}
	if err := r.get(ctx, run.Namespace, snapshotOf(run), snap, "Snapshot"); err != nil {
		return r.fail(run, err)
	}
	if refusal := sameSnapshot(run, snap); refusal != nil {
		return r.fail(run, refusal)
	}
	if snap.Spec.Application != run.Spec.Application {
		return r.fail(run, kernel.Refuse(ReasonSnapshotOfAnotherApplication, "Snapshot %q is of Application %q, not %q", snap.Name, snap.Spec.Application, run.Spec.Application))
	}
	if err := r.get(ctx, run.Namespace, run.Spec.Application, &as.Application{}, "Application"); err != nil {
		return r.fail(run, err)
	}
	var envs as.EnvironmentList
	if err := r.Client.List(ctx, &envs, client.InNamespace(run.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	level := current(run)
	// resumed: every step so far is verified and the next ones wait at their
	// gates; they are looked at again without verifying the last ones again.
	resumed := len(level) == 0 && len(run.Status.EnvironmentStatus) > 0
	if resumed {
		level = promoted(run)
	} else if len(level) == 0 {
		level = []string{first(run)}
		r.addSteps(run, level)
	}
	for {
		if !resumed {
			done, err := r.enter(ctx, run, snap, envs.Items, level)
			if err != nil || run.Status.State == as.PromotionRunStateCompleted {
				return ctrl.Result{}, err
			}
			if !done {
				return r.waitOrTimeout(run), nil
			}
		}
		var next, manual []string
		if run.Spec.AutomatedPromotion != nil {
			next, manual = nextLevel(envs.Items, level, promoted(run))
			if err := r.checkHold(ctx, run, envs.Items, level, next); err != nil {
				return ctrl.Result{}, err
			}
		}
		if len(manual) > 0 && !resumed {
			r.Recorder.Eventf(run, corev1.EventTypeNormal, "ManualEnvironment", "Not promoting to %s: deploymentStrategy is Manual", strings.Join(manual, ", "))
		}
		resumed = false
		if len(next) == 0 {
			r.complete(run, as.PromotionRunCompleteResultSuccess, "", "")
			return ctrl.Result{}, nil
		}
		// The next Environments are entered together, once the gates of each let the run in.
		var runs as.PromotionRunList
		if err := r.Client.List(ctx, &runs, client.InNamespace(run.Namespace)); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.gates(ctx, run, runs.Items, next, snap); err != nil {
			return ctrl.Result{}, err
		}
		r.addSteps(run, next)
		level = next
	}
}

// enter checks that the level's Environments exist and deploys the Snapshot to them.
func (r *Reconciler) enter(ctx context.Context, run *as.PromotionRun, snap *as.Snapshot, envs []as.Environment, level []string) (bool, error) {
	for _, name := range level {
		if slices.ContainsFunc(envs, func(e as.Environment) bool { return e.Name == name }) {
			continue
		}
		if err := r.get(ctx, run.Namespace, name, &as.Environment{}, "Environment"); err != nil {
			_, err = r.fail(run, err)
			return false, err
		}
	}
	return r.deploy(ctx, run, snap, level)
}

// get reads a named input of the run; a missing one is confirmed on the API
// server (the cache may not have it yet) and refused.
func (r *Reconciler) get(ctx context.Context, ns, name string, obj client.Object, kind string) error {
	err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return kernel.Refuse(kind+"NotFound", "%s %q not found", kind, name)
	}
	return err
}

// first is the Environment the run begins with.
func first(run *as.PromotionRun) string {
	if run.Spec.ManualPromotion != nil {
		return run.Spec.ManualPromotion.TargetEnvironment
	}
	return run.Spec.AutomatedPromotion.InitialEnvironment
}

// current is the step in progress: its Environments.
func current(run *as.PromotionRun) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status == as.PromotionRunEnvironmentStatusInProgress {
			out = append(out, s.EnvironmentName)
		}
	}
	return out
}

func promoted(run *as.PromotionRun) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		out = append(out, s.EnvironmentName)
	}
	return out
}

func (r *Reconciler) addSteps(run *as.PromotionRun, envs []string) {
	now := r.now()
	for _, e := range envs {
		run.Status.EnvironmentStatus = append(run.Status.EnvironmentStatus, as.PromotionRunEnvironmentStatus{
			Step: len(run.Status.EnvironmentStatus) + 1, EnvironmentName: e,
			Status: as.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Promoting", StartTime: &now,
		})
	}
}

// deploy binds each Environment of the level to the Snapshot and records
// whether it is deployed; a binding that cannot be used fails the run.
func (r *Reconciler) deploy(ctx context.Context, run *as.PromotionRun, snap *as.Snapshot, level []string) (bool, error) {
	run.Status.ActiveBindings = nil
	all := true
	for _, env := range level {
		seb, err := r.bind(ctx, run, env)
		if refusal := kernel.AsRefusal(err); refusal != nil {
			setStep(run, env, as.PromotionRunEnvironmentStatusFailure, refusal.Message)
			r.complete(run, as.PromotionRunCompleteResultFailure, refusal.Reason, refusal.Message)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		run.Status.ActiveBindings = append(run.Status.ActiveBindings, seb.Name)
		if c := meta.FindStatusCondition(seb.Status.BindingConditions, as.BindingConditionErrorOccurred); c != nil &&
			c.Status == metav1.ConditionTrue && c.ObservedGeneration == seb.Generation && seb.Spec.Snapshot == snap.Name {
			// The binding cannot deploy yet: a Component without GitOps status, an
			// Environment not connected, a mistake in the binding. Each may be
			// fixed while the run waits; its deadline ends the wait.
			setStep(run, env, as.PromotionRunEnvironmentStatusInProgress, fmt.Sprintf("SnapshotEnvironmentBinding %s: %s", seb.Name, c.Message))
			all = false
			continue
		}
		var apps argov1alpha1.ApplicationList
		if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingLabels{ownership.LabelOwnerUID: string(seb.UID)}); err != nil {
			return false, err
		}
		tenant := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: seb.Namespace}, tenant); err != nil {
			return false, err
		}
		// Look-alikes (the binding's labels in another project) do not count.
		ok, progress := verdict(snap, tenantproject.ByOwner(apps.Items, ownership.KindBinding, string(seb.UID), seb.Namespace, string(tenant.UID)))
		if ok {
			setStep(run, env, as.PromotionRunEnvironmentStatusSuccess, progress)
			r.verified(run, env)
		} else {
			setStep(run, env, as.PromotionRunEnvironmentStatusInProgress, progress)
			all = false
		}
	}
	return all, nil
}

// bind points the binding of the run's application and env at the Snapshot,
// creating <app>-<env>-generated-binding when there is none. An existing
// binding is the oldest one for the pair (the one that deploys; any other is a
// duplicate). It refuses a binding that cannot be used.
func (r *Reconciler) bind(ctx context.Context, run *as.PromotionRun, env string) (*as.SnapshotEnvironmentBinding, error) {
	seb, err := r.bindingOf(ctx, run.Namespace, run.Spec.Application, env)
	if err != nil {
		return nil, err
	}
	if seb == nil {
		seb = &as.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.Spec.Application + "-" + env + BindingSuffix,
				Labels: map[string]string{as.LabelApplication: run.Spec.Application, as.LabelEnvironment: env}},
			Spec: as.SnapshotEnvironmentBindingSpec{Application: run.Spec.Application, Environment: env, Snapshot: snapshotOf(run)},
		}
		if b, ok := boundSnapshot(run); ok {
			seb.Annotations = map[string]string{as.AnnotationBoundSnapshot: b}
		}
		err := r.Client.Create(ctx, seb)
		if apierrors.IsAlreadyExists(err) {
			// Either our cache has not seen it yet (retry), or a binding of that
			// name deploys something else.
			existing := &as.SnapshotEnvironmentBinding{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(seb), existing); err != nil {
				return nil, err
			}
			if existing.Spec.Application != run.Spec.Application || existing.Spec.Environment != env {
				return nil, kernel.Refuse(ReasonBindingNameTaken, "SnapshotEnvironmentBinding %s exists for Application %q and Environment %q", seb.Name,
					existing.Spec.Application, existing.Spec.Environment)
			}
			return nil, fmt.Errorf("SnapshotEnvironmentBinding %s: %w", seb.Name, kernel.ErrStaleCache)
		}
		if apierrors.IsInvalid(err) {
			// Application and Environment names too long for a binding's name or
			// labels: no retry can help, and the run would block the application's next.
			return nil, kernel.Refuse(ReasonBindingInvalid, "cannot create SnapshotEnvironmentBinding %s: %v", seb.Name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("creating SnapshotEnvironmentBinding %s: %w", seb.Name, err)
		}
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "BindingCreated", "Created SnapshotEnvironmentBinding %s for Environment %s", seb.Name, env)
		return seb, nil
	}
	b, recorded := boundSnapshot(run)
	if name := snapshotOf(run); seb.Spec.Snapshot != name || (recorded && seb.Annotations[as.AnnotationBoundSnapshot] != b) {
		// The name and the identity the gates let in, in one write: the
		// binding deploys no other Snapshot of that name (binding.Bound).
		patch := client.MergeFromWithOptions(seb.DeepCopy(), client.MergeFromWithOptimisticLock{})
		seb.Spec.Snapshot = name
		if recorded {
			if seb.Annotations == nil {
				seb.Annotations = map[string]string{}
			}
			seb.Annotations[as.AnnotationBoundSnapshot] = b
		}
		if err := r.Client.Patch(ctx, seb, patch); err != nil {
			return nil, fmt.Errorf("pointing SnapshotEnvironmentBinding %s at Snapshot %s: %w", seb.Name, name, err)
		}
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "BindingUpdated", "SnapshotEnvironmentBinding %s now deploys Snapshot %s", seb.Name, name)
	}
	return seb, nil
}

// boundSnapshot is the annotation AnnotationBoundSnapshot for the Snapshot
// the run deploys and the identity it recorded, if it recorded one.
func boundSnapshot(run *as.PromotionRun) (string, bool) {
	if !run.Status.SnapshotIdentity.Known() || snapshotOf(run) == "" {
		return "", false
	}
	raw, err := json.Marshal(as.BoundSnapshot{Name: snapshotOf(run), SnapshotIdentity: run.Status.SnapshotIdentity})
	return string(raw), err == nil
}

func setStep(run *as.PromotionRun, env string, status as.PromotionRunEnvironmentStatusField, msg string) {
	for i := range run.Status.EnvironmentStatus {
		if s := &run.Status.EnvironmentStatus[i]; s.EnvironmentName == env {
			s.Status, s.DisplayStatus = status, msg
		}
	}
}

// waitOrTimeout fails the run when the step in progress is past its deadline:
// the run may take Timeout per Environment promoted to so far.
func (r *Reconciler) waitOrTimeout(run *as.PromotionRun) ctrl.Result {
	deadline := run.Status.PromotionStartTime.Add(time.Duration(len(run.Status.EnvironmentStatus)) * r.timeout())
	// Time spent at a gate does not count: a step may take Timeout from when it entered its Environment.
	for _, s := range run.Status.EnvironmentStatus {
		if s.StartTime != nil && s.StartTime.Add(r.timeout()).After(deadline) {
			deadline = s.StartTime.Add(r.timeout())
		}
	}
	left := deadline.Sub(r.now().Time)
	if left > 0 {
		return ctrl.Result{RequeueAfter: min(left, kernel.UnwatchedRecheck)}
	}
	var msg string
	for _, env := range current(run) {
		for _, s := range run.Status.EnvironmentStatus {
			if s.EnvironmentName == env {
				msg = fmt.Sprintf("timed out after %s promoting to %s: %s", r.timeout(), env, s.DisplayStatus)
				setStep(run, env, as.PromotionRunEnvironmentStatusFailure, msg)
			}
		}
	}
	r.complete(run, as.PromotionRunCompleteResultFailure, ReasonTimedOut, msg)
	return ctrl.Result{}
}

// fail ends the run when its inputs are refused (a PromotionRun is not
// retried); any other error is returned.
func (r *Reconciler) fail(run *as.PromotionRun, err error) (ctrl.Result, error) {
	refusal := kernel.AsRefusal(err)
	if refusal == nil {
		return ctrl.Result{}, err
	}
	for _, env := range current(run) {
		setStep(run, env, as.PromotionRunEnvironmentStatusFailure, refusal.Message)
	}
	r.complete(run, as.PromotionRunCompleteResultFailure, refusal.Reason, refusal.Message)
	return ctrl.Result{}, nil
}

// complete ends the run, with an ErrorOccurred condition and a Warning of
// the failure's reason (why) on failure.
func (r *Reconciler) complete(run *as.PromotionRun, result as.PromotionRunCompleteResult, why, msg string) {
	run.Status.State = as.PromotionRunStateCompleted
	run.Status.CompletionResult = result
	if result == as.PromotionRunCompleteResultSuccess {
		r.Recorder.Eventf(run, corev1.EventTypeNormal, "PromotionSucceeded", "Snapshot %s promoted to %s", snapshotOf(run), strings.Join(promoted(run), ", "))
		return
	}
	// One Warning, named after the failure: a completed run is done.
	kernel.SetConditionWarning(r.Recorder, run, &run.Status.Conditions, metav1.Condition{Type: as.PromotionRunConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: reason, Message: msg, ObservedGeneration: run.Generation}, why, r.now())
}

// sameSnapshot refuses a run whose Snapshot is no longer the one (UID and
// content) it recorded: one re-created under the name was not gated. A run
// that recorded none (started before identities were) records snap's.
func sameSnapshot(run *as.PromotionRun, snap *as.Snapshot) *kernel.Refusal {
	id := snap.Identity()
	if !run.Status.SnapshotIdentity.Known() {
		run.Status.SnapshotIdentity = id
		return nil
	}
	if was := run.Status.SnapshotIdentity; !was.Matches(id) {
		return kernel.Refuse(ReasonSnapshotReplaced, "Snapshot %s was replaced since the run started (was UID %s, content %s; now UID %s, content %s): promote the new one with a new PromotionRun",
			snap.Name, was.UID, was.Digest, id.UID, id.Digest)
	}
	return nil
}
