// Package deploymenttarget is the reclaimer of ADR-8: it keeps each
// DeploymentTarget's phase (Available, Bound, Released, Failed), releases a
// target whose claim disappeared without the binder (Retain) or deletes a
// provisioned one (Delete), and, when a provisioned target is deleted, has its
// provisioner free the external resources before the provisioner finalizer
// goes (Failed when that keeps failing).
package deploymenttarget

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of the Reconciler.
const (
	// DefaultReleaseTimeout: a release still failing after this long marks the
	// target Failed (the original service's 2 minutes); it is still retried.
	DefaultReleaseTimeout = 2 * time.Minute
)

// Reconciler reconciles DeploymentTargets.
type Reconciler struct {
	Client client.Client
	// APIReader confirms a claim is gone before its target is released.
	APIReader      client.Reader
	Recorder       record.EventRecorder
	Provisioners   provisioner.Set
	ReleaseTimeout time.Duration
	// Now is the clock; tests may set it.
	Now kernel.Clock

	written kernel.OwnWrites
}

// Reconcile: fetch -> one deferred status patch, written only when it
// changed -> reconcileNormal or reconcileDelete. The provisioner finalizer is
// the provisioners' (they create targets with it; reconcileNormal puts it
// back), so this reconciler adds none of its own.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	dt := &as.DeploymentTarget{}
	// Our last write not cached yet: deciding again would write the same
	// again (or meet a conflict); Outcome requeues ErrStaleCache.
	if found, err := r.written.Get(ctx, r.Client, req.NamespacedName, dt); !found {
		return kernel.Outcome(ctrl.Result{}, err)
	}
	if r.midBinding(ctx, dt) {
		// The binder reserved the target and is writing the binding on the
		// claim, whose update wakes us: the phase is decided then, in one
		// status write with the observedGeneration the claimRef moved
		// (two writes otherwise, an exception to the kernel's shape).
		return kernel.Outcome(ctrl.Result{}, kernel.ErrStaleCache)
	}
	// Locked: the binder writes phases too (Released), and a stale one must
	// not win (a conflict is retried); our own writes of this pass are not
	// stale. A PUT, the API server's cheapest locked write.
	patcher := kernel.NewStatusPatcher(r.Client, dt).WithUpdate()
	defer func() {
		rv := dt.ResourceVersion
		var werr error
		patcher.Patch(ctx, dt, &werr)
		if dt.ResourceVersion != rv {
			r.written.Replaced(req.NamespacedName, rv)
		}
		// A conflict: the target changed since it was read; at once again.
		if werr != nil && err == nil {
			res, err = kernel.Outcome(res, werr)
		}
	}()
	if !dt.DeletionTimestamp.IsZero() {
		err = r.reconcileDelete(ctx, dt)
	} else {
		err = r.reconcileNormal(ctx, dt)
	}
	// From the phase (Bound is ours too: the binder writes the binding on
	// the claim, and its update wakes us).
	dt.Status.ObservedGeneration = dt.Generation
	kernel.SetReady(&dt.Status.Conditions, err, readiness(dt.Status.Phase), dt.Generation, r.Now.Now())
	return kernel.Outcome(ctrl.Result{}, err)
}

// reconcileNormal keeps the phase: Available when free, Bound when its claim
// names it, Released (or deleted, when provisioned and the policy is Delete)
// when the claim it was bound to is gone.
func (r *Reconciler) reconcileNormal(ctx context.Context, dt *as.DeploymentTarget) error {
	if p := dt.Annotations[as.AnnDynamicallyProvisioned]; p != "" && r.Provisioners[as.Provisioner(p)] != nil &&
		!controllerutil.ContainsFinalizer(dt, as.FinalizerProvisioner) {
		// Our provisioners create targets with it; put back if removed while live.
		if err := r.patchMeta(ctx, dt, func() { controllerutil.AddFinalizer(dt, as.FinalizerProvisioner) }); err != nil {
			return err
		}
	}
	if dt.Spec.ClaimRef == "" {
		if dt.Status.Phase == "" || dt.Status.Phase == as.DeploymentTargetPhasePending {
			r.setPhase(dt, as.DeploymentTargetPhaseAvailable, nil, "available for a claim")
		}
		return nil
	}
	claim := &as.DeploymentTargetClaim{}
	key := types.NamespacedName{Namespace: dt.Namespace, Name: dt.Spec.ClaimRef}
	// The cache first: every write to a bound claim wakes its target, and an
	// uncached read each time was most of the ~6 reads per claim that make
	// bench measured. A claim the cache shows is there (its deletion's event
	// wakes us again); one it does not show is confirmed gone by the API server.
	err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, key, claim)
	gone := apierrors.IsNotFound(err)
	if err != nil && !gone {
		return err
	}
	if dt.Status.Phase != as.DeploymentTargetPhaseBound {
		switch boundPhase(dt, claim, gone) {
		case as.DeploymentTargetPhaseBound:
			// The binder wrote the binding on the claim (bind-complete): the
			// phase is ours to write, in this pass's one status write.
			r.setPhase(dt, as.DeploymentTargetPhaseBound, nil, "bound to claim "+claim.Name)
		case as.DeploymentTargetPhaseAvailable:
			// Reserved by the binder for a claim that went before its
			// binding was written, or was bound elsewhere: free again.
			if err := r.patchMeta(ctx, dt, func() {
				dt.Spec.ClaimRef = ""
				delete(dt.Annotations, as.AnnBoundByController)
			}); err != nil {
				return err
			}
			r.setPhase(dt, as.DeploymentTargetPhaseAvailable, nil, "available for a claim")
		default:
			// Pre-bound (by a user or a provisioner) to a claim the binder
			// has not bound yet: the binder decides.
			if dt.Status.Phase == "" {
				r.setPhase(dt, as.DeploymentTargetPhaseAvailable, nil, "reserved for claim "+dt.Spec.ClaimRef)
			}
		}
		return nil
	}
	if !gone {
		return nil
	}
	// Bound to a claim that is gone without the binder's finalizer having run.
	policy := as.ReclaimPolicyRetain
	class := &as.DeploymentTargetClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: string(dt.Spec.DeploymentTargetClassName)}, class); err == nil {
		policy = class.Spec.ReclaimPolicy
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if policy == as.ReclaimPolicyDelete && dt.Annotations[as.AnnDynamicallyProvisioned] != "" {
		uid := dt.UID
		if err := r.Client.Delete(ctx, dt, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting DeploymentTarget %s: %w", dt.Name, err)
		}
		r.Recorder.Eventf(dt, corev1.EventTypeNormal, "Deleted", "Claim %s is gone and the reclaimPolicy is Delete", dt.Spec.ClaimRef)
		return nil
	}
	claimName := dt.Spec.ClaimRef
	if err := r.patchMeta(ctx, dt, func() {
		dt.Spec.ClaimRef = ""
		delete(dt.Annotations, as.AnnBoundByController)
	}); err != nil {
		return err
	}
	r.setPhase(dt, as.DeploymentTargetPhaseReleased, nil, "released: claim "+claimName+" is gone (reclaimPolicy Retain)")
	r.Recorder.Eventf(dt, corev1.EventTypeNormal, "Released", "Claim %s is gone; the target is Released", claimName)
	return nil
}

// reconcileDelete has the provisioner free what it made, then removes the
// provisioner finalizer. A release still failing after ReleaseTimeout marks
// the target Failed (once, with a Warning Event) and keeps being retried.
func (r *Reconciler) reconcileDelete(ctx context.Context, dt *as.DeploymentTarget) error {
	if !controllerutil.ContainsFinalizer(dt, as.FinalizerProvisioner) {
		return nil
	}
	name := as.Provisioner(dt.Annotations[as.AnnDynamicallyProvisioned])
	p := r.Provisioners[name]
	var done bool
	var why string
	if p == nil {
		why = fmt.Sprintf("provisioner %q is not run by this GitOps Service: nothing can free the target's resources (remove the finalizer %s to let it go anyway)", name, as.FinalizerProvisioner)
	} else {
		var err error
		done, err = p.Release(ctx, dt)
		if err != nil {
			why = err.Error()
		}
	}
	if done {
		return r.patchMeta(ctx, dt, func() { controllerutil.RemoveFinalizer(dt, as.FinalizerProvisioner) })
	}
	if r.Now.Now().Sub(dt.DeletionTimestamp.Time) < r.ReleaseTimeout {
		// The release ends without an event we watch.
		return kernel.Wait("Releasing", kernel.PollInterval, "the provisioner to free the target's resources")
	}
	if why == "" {
		why = fmt.Sprintf("the external resources are not freed after %s", r.ReleaseTimeout)
	}
	// Failed, and still retried: the external resources are a state we do
	// not watch, so as often as one (a namespace may just be slow to go).
	refusal := kernel.Refuse(as.DeploymentTargetReasonReleaseFailed, "releasing the target's resources failed: %s", why).Retry(kernel.UnwatchedRecheck)
	r.setPhase(dt, as.DeploymentTargetPhaseFailed, refusal, "")
	return refusal
}

// patchMeta patches what mutate changes outside the status, with optimistic
// concurrency, keeping the status this pass computed.
func (r *Reconciler) patchMeta(ctx context.Context, dt *as.DeploymentTarget, mutate func()) error {
	patch := client.MergeFromWithOptions(dt.DeepCopy(), client.MergeFromWithOptimisticLock{})
	mutate()
	status, rv := dt.Status, dt.ResourceVersion
	if err := r.Client.Patch(ctx, dt, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	dt.Status = status
	r.written.Replaced(client.ObjectKeyFromObject(dt), rv)
	return nil
}

// setPhase sets the phase and its ErrorOccurred condition: True with the
// refusal, else False with message. The Warning Event of a refusal comes
// once, when the target turns Failed.
func (r *Reconciler) setPhase(dt *as.DeploymentTarget, phase as.DeploymentTargetPhase, refusal *kernel.Refusal, message string) {
	cond := metav1.Condition{Type: as.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionFalse,
		Reason: as.DeploymentTargetReasonSuccess, Message: message, ObservedGeneration: dt.Generation}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, refusal.Reason, refusal.Message
	}
	warn := refusal != nil && dt.Status.Phase != phase
	dt.Status.Phase = phase
	kernel.SetCondition(r.Recorder, dt, &dt.Status.Conditions, cond, r.Now.Now(), warn)
}

// midBinding says whether the binder reserved dt for a claim the cache
// shows, but the cache does not show the binding on the claim yet.
func (r *Reconciler) midBinding(ctx context.Context, dt *as.DeploymentTarget) bool {
	if !dt.DeletionTimestamp.IsZero() || dt.Spec.ClaimRef == "" || dt.Status.Phase == as.DeploymentTargetPhaseBound ||
		dt.Annotations[as.AnnBoundByController] != as.AnnBinderValueTrue {
		return false
	}
	claim := &as.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: dt.Namespace, Name: dt.Spec.ClaimRef}, claim); err != nil {
		return false
	}
	return claim.DeletionTimestamp.IsZero() && claim.Annotations[as.AnnBindCompleted] != as.AnnBinderValueTrue
}

// boundPhase is the phase a target pre-bound to a claim but not Bound
// moves to: Bound once the binder wrote the binding on the claim (it names
// the target and says bind-complete), Available when the binder reserved
// it (bound-by-controller) for a claim that is gone or bound to another
// target, else "" (it stays: a user's or a provisioner's pre-binding waits
// for its claim).
func boundPhase(dt *as.DeploymentTarget, claim *as.DeploymentTargetClaim, gone bool) as.DeploymentTargetPhase {
	reserved := dt.Annotations[as.AnnBoundByController] == as.AnnBinderValueTrue
	switch {
	case gone && reserved:
		return as.DeploymentTargetPhaseAvailable
	case !gone && reserved && claim.Spec.TargetName != dt.Name && claim.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue:
		return as.DeploymentTargetPhaseAvailable
	case !gone && claim.DeletionTimestamp.IsZero() && claim.Spec.TargetName == dt.Name &&
		claim.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue:
		return as.DeploymentTargetPhaseBound
	}
	return ""
}
