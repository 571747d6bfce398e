// Package deploymenttargetclaim is the binder of ADR-8 (modelled on the
// PersistentVolume binder): it binds each DeploymentTargetClaim 1:1 to a
// DeploymentTarget of its namespace and class, asks the class's provisioner
// for one when none matches, marks a claim whose target is gone Lost, and on
// the claim's deletion deletes or releases its target per the class's
// reclaimPolicy.
package deploymenttargetclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// errConflict: another writer changed the target or claim under us; the pass
// starts again at once from fresh reads (kernel.Outcome retries conflicts).
var errConflict = apierrors.NewConflict(as.GroupVersion.WithResource("deploymenttargetclaims").GroupResource(), "",
	errors.New("the claim or a target changed under the binder"))

// Reconciler binds DeploymentTargetClaims.
type Reconciler struct {
	Client client.Client
	// APIReader is for what the cache cannot settle: that a target the cache
	// does not show is really gone, and the targets of a deleted claim.
	// Binding reads the cache; its writes are conditional (see memory.go).
	APIReader    client.Reader
	Recorder     record.EventRecorder
	Provisioners provisioner.Set
	// Now is the clock of condition times; tests may set it.
	Now kernel.Clock

	reserved reservations
	written  kernel.OwnWrites
}

// Reconcile: fetch -> one deferred status patch -> reconcileNormal or
// reconcileDelete -> Outcome. The finalizer is an exception to the
// kernel's shape: it is not written on its own but with the claim's first
// write that leaves something to clean up (the binding, or the mark for a
// provisioner), so a bound claim costs the API server four writes, what
// ADR-8 asks for (the target's claimRef and phase, the claim's binding and
// phase), not six. The window this opens, a target reserved for a claim
// deleted before its binding was written, is closed by undoing the
// reservation (unreserve) and, after a crash, by the reclaimer (the target
// carries the bound-by-controller annotation).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	claim := &as.DeploymentTargetClaim{}
	// Our last write not cached yet: deciding again would write the same
	// again (or meet a conflict); Outcome requeues ErrStaleCache.
	if found, err := r.written.Get(ctx, r.Client, req.NamespacedName, claim); !found {
		return kernel.Outcome(ctrl.Result{}, err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return kernel.Outcome(r.reconcileDelete(ctx, claim))
	}
	// A PUT (the cheapest write for the API server; locked: the binding
	// just written, or the version the cache shows after our last write).
	patcher := kernel.NewStatusPatcher(r.Client, claim).WithUpdate()
	defer func() {
		rv := claim.ResourceVersion
		var werr error
		patcher.Patch(ctx, claim, &werr)
		if claim.ResourceVersion != rv {
			r.written.Replaced(req.NamespacedName, rv)
		}
		// A conflict: the claim changed since it was read; at once again.
		if werr != nil && err == nil {
			res, err = kernel.Outcome(res, werr)
		}
	}()
	phase, err := r.reconcileNormal(ctx, claim)
	r.setStatus(claim, phase, err)
	claim.Status.ObservedGeneration = claim.Generation
	kernel.SetReady(&claim.Status.Conditions, err, readiness(claim, phase), claim.Generation, r.Now.Now())
	return kernel.Outcome(ctrl.Result{}, err)
}

// setStatus records what the pass decided: the phase, and the
// ErrorOccurred condition (True with a Warning Event for a refusal, False
// while waiting or once bound). A transient error leaves the status as it
// was.
func (r *Reconciler) setStatus(claim *as.DeploymentTargetClaim, phase as.DeploymentTargetClaimPhase, err error) {
	var c metav1.Condition
	refusal, waiting := kernel.AsRefusal(err), kernel.AsWaiting(err)
	switch {
	case refusal != nil:
		c = condition(claim.Generation, metav1.ConditionTrue, refusal.Reason, refusal.Message)
	case waiting != nil:
		c = condition(claim.Generation, metav1.ConditionFalse, waiting.Reason, waiting.For)
	case err == nil:
		c = condition(claim.Generation, metav1.ConditionFalse, as.DeploymentTargetReasonSuccess, "bound to DeploymentTarget "+claim.Spec.TargetName)
	default:
		return
	}
	claim.Status.Phase = phase
	kernel.SetCondition(r.Recorder, claim, &claim.Status.Conditions, c, r.Now.Now(), refusal != nil)
}

// reconcileNormal decides the claim's binding: the claim's phase with nil
// (bound to claim.Spec.TargetName), a *kernel.Refusal or a *kernel.Waiting;
// any other error is transient.
func (r *Reconciler) reconcileNormal(ctx context.Context, claim *as.DeploymentTargetClaim) (as.DeploymentTargetClaimPhase, error) {
	if claim.Spec.TargetName != "" {
		return r.reconcileNamed(ctx, claim)
	}
	dts, busy, err := r.cachedTargets(ctx, claim.Namespace)
	if err != nil {
		return "", err
	}
	changed := false
	for _, dt := range candidates(claim, dts) {
		err := r.bind(ctx, claim, dt, true)
		switch {
		case errors.Is(err, errTaken):
			continue
		case errors.Is(err, errBusy):
			busy = true
			continue
		case errors.Is(err, errChanged):
			changed = true
			continue
		case err != nil:
			return "", err
		}
		return as.DeploymentTargetClaimPhaseBound, nil
	}
	// A target that changed since the cache showed it, or that another
	// worker is reserving, may still suit this claim: look again rather than
	// send the claim to a provisioner. Another worker's reservation is a
	// write of this process the cache does not show yet: its event (or
	// StaleCacheRetry) brings us back, without the backoff that grows with
	// every conflict (many claims racing for few targets waited minutes).
	switch {
	case changed:
		return "", errConflict
	case busy:
		return "", kernel.ErrStaleCache
	}
	return r.provision(ctx, claim)
}

// reconcileNamed handles a claim whose targetName is set: by the user (bind to
// exactly that target) or by us (keep it bound, or Lost).
func (r *Reconciler) reconcileNamed(ctx context.Context, claim *as.DeploymentTargetClaim) (as.DeploymentTargetClaimPhase, error) {
	name := claim.Spec.TargetName
	// A path-like name ("../other/target") is no object name: the client would
	// refuse the read on every retry and the claim would show nothing.
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return as.DeploymentTargetClaimPhasePending, kernel.Refuse(as.DeploymentTargetReasonMismatch,
			"spec.targetName %q is not the name of a DeploymentTarget in this namespace", name)
	}
	dt := &as.DeploymentTarget{}
	// Not in the cache may be not cached yet (a provisioned target): a
	// claim is Lost only when the API server says so.
	err := kernel.GetConfirmed(ctx, r.Client, r.APIReader, types.NamespacedName{Namespace: claim.Namespace, Name: name}, dt)
	if apierrors.IsNotFound(err) {
		dt = nil
	} else if err != nil {
		return "", err
	}
	if dt != nil {
		var busy bool
		if dt, busy = r.reserved.view(dt); busy {
			return "", kernel.ErrStaleCache
		}
	}
	if phase, err := named(claim, dt); err != nil {
		return phase, err
	}
	err = r.bind(ctx, claim, dt, false)
	if errors.Is(err, errBusy) {
		return "", kernel.ErrStaleCache
	}
	if errors.Is(err, errTaken) || errors.Is(err, errChanged) {
		return "", errConflict
	}
	if err != nil {
		return "", err
	}
	return as.DeploymentTargetClaimPhaseBound, nil
}

// cachedTargets are the claim namespace's DeploymentTargets from the cache,
// with the reservations of this process it does not show yet; busy when
// another worker's reservation of one is under way.
func (r *Reconciler) cachedTargets(ctx context.Context, namespace string) (_ []*as.DeploymentTarget, busy bool, _ error) {
	var list as.DeploymentTargetList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, false, fmt.Errorf("listing DeploymentTargets in %s: %w", namespace, err)
	}
	out := make([]*as.DeploymentTarget, 0, len(list.Items))
	for i := range list.Items {
		dt, inFlight := r.reserved.view(&list.Items[i])
		if inFlight {
			busy = true
			continue
		}
		out = append(out, dt)
	}
	return out, busy, nil
}

// targets lists the claim namespace's DeploymentTargets from the API server.
func (r *Reconciler) targets(ctx context.Context, namespace string) ([]*as.DeploymentTarget, error) {
	var list as.DeploymentTargetList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DeploymentTargets in %s: %w", namespace, err)
	}
	out := make([]*as.DeploymentTarget, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// errTaken: the target was bound to another claim meanwhile, or is gone.
var errTaken = errors.New("target taken")

// errBusy: another worker of this process is reserving the target.
var errBusy = errors.New("target being reserved by another worker")

// errChanged: the target changed since it was read (by another claim, or
// by its own reconciler); whether it still suits is not known.
var errChanged = errors.New("target changed")

// bind binds claim and dt. The target's claimRef is written first, with
// optimistic concurrency (the resourceVersion read): of two claims racing for
// one target exactly one wins, and a pass that stops half way finds its
// target again by claimRef. Then, in one write, locked too, the claim's
// targetName, the ADR's annotations and the finalizer: a claim read from a
// cache that is behind (not yet showing its provisioner mark, or its
// binding) fails there, and the target it reserved is given back. The
// claim's phase follows in the deferred status write, the target's from
// its own reconciler (which sees bind-complete).
func (r *Reconciler) bind(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget, chosen bool) error {
	reserved := false
	if dt.Spec.ClaimRef != claim.Name {
		if err := r.reserve(ctx, claim, dt); err != nil {
			return err
		}
		reserved = true
	}
	if bindingWritten(claim, dt, chosen) {
		return nil
	}
	status, rv := claim.Status, claim.ResourceVersion
	updated := claim.DeepCopy()
	updated.Spec.TargetName = dt.Name
	if chosen {
		metav1.SetMetaDataAnnotation(&updated.ObjectMeta, as.AnnBoundByController, as.AnnBinderValueTrue)
	}
	metav1.SetMetaDataAnnotation(&updated.ObjectMeta, as.AnnBindCompleted, as.AnnBinderValueTrue)
	controllerutil.AddFinalizer(updated, as.FinalizerBinder)
	// A PUT of the claim as read, locked by its resourceVersion like the
	// claimRef: the API server's cheapest write (make bench
	// BENCH=ClaimWrites: a merge patch costs it 13-19% more CPU).
	if err := r.Client.Update(ctx, updated); err != nil {
		if reserved {
			// Decided on a claim that changed (or went): the target is
			// not its to keep.
			if uerr := r.unreserve(ctx, claim, dt); uerr != nil {
				return uerr
			}
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return errConflict
		}
		return fmt.Errorf("writing the binding of claim %s: %w", claim.Name, err)
	}
	*claim = *updated
	claim.Status = status
	r.written.Replaced(client.ObjectKeyFromObject(claim), rv)
	// A claim bound at its first pass says so in its phase and Ready, as a
	// PersistentVolumeClaim does: an Event each would be a fifth write per
	// claim (ADR-8 needs four). One that waited, and showed why in
	// its Ready condition, gets the Event that ends the wait.
	if status.Phase == as.DeploymentTargetClaimPhasePending {
		r.Recorder.Eventf(claim, corev1.EventTypeNormal, "Bound", "Bound to DeploymentTarget %s", dt.Name)
	}
	return nil
}

// reserve writes the target's claimRef, with the bound-by-controller
// annotation (the reclaimer frees a target so reserved whose claim went
// before it was bound), conditional on the version read. errChanged when
// the target changed since (a claim made right after its target meets the
// target's first phase write); errTaken when it is gone; errBusy when
// another worker of ours is reserving it.
func (r *Reconciler) reserve(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) error {
	if !r.reserved.take(dt, claim.Name) {
		return errBusy
	}
	updated := dt.DeepCopy()
	updated.Spec.ClaimRef = claim.Name
	metav1.SetMetaDataAnnotation(&updated.ObjectMeta, as.AnnBoundByController, as.AnnBinderValueTrue)
	err := r.Client.Update(ctx, updated)
	if err != nil {
		r.reserved.done(dt, nil)
	} else {
		r.reserved.done(dt, updated)
	}
	switch {
	case err == nil:
		*dt = *updated
		return nil
	case apierrors.IsNotFound(err):
		return errTaken
	case apierrors.IsConflict(err):
		return errChanged
	}
	return fmt.Errorf("binding DeploymentTarget %s: %w", dt.Name, err)
}

// unreserve gives back a target reserve wrote for claim, unless it changed
// hands since (read again on a conflict: not the happy path).
func (r *Reconciler) unreserve(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) error {
	cur := dt.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur.Spec.ClaimRef != claim.Name {
			return nil
		}
		updated := cur.DeepCopy()
		updated.Spec.ClaimRef = ""
		delete(updated.Annotations, as.AnnBoundByController)
		err := r.Client.Update(ctx, updated)
		if apierrors.IsConflict(err) {
			if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dt), cur); gerr != nil {
				return gerr
			}
		}
		return err
	})
	r.reserved.done(dt, nil)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("giving back DeploymentTarget %s: %w", dt.Name, err)
	}
	return nil
}

// provision handles a claim no existing target satisfies.
func (r *Reconciler) provision(ctx context.Context, claim *as.DeploymentTargetClaim) (as.DeploymentTargetClaimPhase, error) {
	pending := as.DeploymentTargetClaimPhasePending
	class := &as.DeploymentTargetClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: string(claim.Spec.DeploymentTargetClassName)}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return pending, kernel.Refuse(as.DeploymentTargetReasonClassNotFound,
				"the DeploymentTargetClass %q does not exist", claim.Spec.DeploymentTargetClassName)
		}
		return "", err
	}
	name := class.Spec.Provisioner
	if claim.Annotations[as.AnnTargetProvisioner] != string(name) || !controllerutil.ContainsFinalizer(claim, as.FinalizerBinder) {
		// With the finalizer (what a provisioner makes is freed when the
		// claim goes), locked: a claim read from a cache that is behind
		// (already bound) is not sent to a provisioner.
		patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, as.AnnTargetProvisioner, string(name))
		controllerutil.AddFinalizer(claim, as.FinalizerBinder)
		status, rv := claim.Status, claim.ResourceVersion
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return "", errConflict
			}
			return "", fmt.Errorf("marking claim %s for provisioning: %w", claim.Name, err)
		}
		claim.Status = status
		r.written.Replaced(client.ObjectKeyFromObject(claim), rv)
	}
	p := r.Provisioners[name]
	if p == nil {
		// Maybe an external provisioner's job (as with PersistentVolumes): wait.
		return pending, kernel.Wait(as.DeploymentTargetReasonWaitingForProvisioner, kernel.WaitingRetry,
			"waiting for provisioner %s, which this GitOps Service does not run (or whose API is not installed), to provision a DeploymentTarget", name)
	}
	dt, err := p.Provision(ctx, claim, class)
	if kernel.AsRefusal(err) != nil {
		return pending, err
	}
	if err != nil {
		return "", fmt.Errorf("provisioner %s: %w", name, err)
	}
	if dt == nil {
		// The provisioner waits for something it may not watch.
		return pending, kernel.Wait(as.DeploymentTargetReasonWaitingForProvisioner, kernel.PollInterval,
			"waiting for provisioner %s to provision a DeploymentTarget", name)
	}
	if err := r.bind(ctx, claim, dt, true); err != nil {
		if errors.Is(err, errBusy) {
			return "", kernel.ErrStaleCache
		}
		if errors.Is(err, errTaken) || errors.Is(err, errChanged) {
			return "", errConflict
		}
		return "", err
	}
	return as.DeploymentTargetClaimPhaseBound, nil
}

// reconcileDelete deletes or releases the claim's target per the class's
// reclaimPolicy (Retain when the class is gone: never delete what we cannot
// decide about), frees half-provisioned resources, then lets the claim go.
func (r *Reconciler) reconcileDelete(ctx context.Context, claim *as.DeploymentTargetClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(claim, as.FinalizerBinder) {
		return ctrl.Result{}, nil
	}
	dts, err := r.targets(ctx, claim.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	policy := as.ReclaimPolicyRetain
	class := &as.DeploymentTargetClass{}
	err = r.Client.Get(ctx, types.NamespacedName{Name: string(claim.Spec.DeploymentTargetClassName)}, class)
	switch {
	case err == nil:
		policy = class.Spec.ReclaimPolicy
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	mine := 0
	for _, dt := range dts {
		if dt.Spec.ClaimRef != claim.Name {
			continue
		}
		mine++
		if err := r.reclaim(ctx, claim, dt, policy); err != nil {
			return ctrl.Result{}, err
		}
	}
	if p := r.Provisioners[as.Provisioner(claim.Annotations[as.AnnTargetProvisioner])]; p != nil && mine == 0 {
		done, err := p.Abandon(ctx, claim)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("freeing what was provisioned for claim %s: %w", claim.Name, err)
		}
		if !done {
			return ctrl.Result{RequeueAfter: kernel.PollInterval}, nil
		}
	}
	return ctrl.Result{}, kernel.RemoveFinalizer(ctx, r.Client, claim, as.FinalizerBinder)
}

// reclaim deletes dt (Delete: its provisioner's finalizer frees what it made)
// or releases it (Retain: claimRef cleared, phase Released).
func (r *Reconciler) reclaim(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget, policy as.ReclaimPolicy) error {
	if !dt.DeletionTimestamp.IsZero() {
		return nil
	}
	if policy == as.ReclaimPolicyDelete {
		uid := dt.UID
		if err := r.Client.Delete(ctx, dt, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting DeploymentTarget %s: %w", dt.Name, err)
		}
		r.Recorder.Eventf(claim, corev1.EventTypeNormal, "DeploymentTargetDeleted",
			"Deleted DeploymentTarget %s (reclaimPolicy Delete)", dt.Name)
		return nil
	}
	updated := dt.DeepCopy()
	updated.Spec.ClaimRef = ""
	delete(updated.Annotations, as.AnnBoundByController)
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("releasing DeploymentTarget %s: %w", dt.Name, client.IgnoreNotFound(err))
	}
	orig := updated.DeepCopy()
	updated.Status.Phase = as.DeploymentTargetPhaseReleased
	kernel.SetCondition(r.Recorder, updated, &updated.Status.Conditions, condition(updated.Generation, metav1.ConditionFalse, as.DeploymentTargetReasonSuccess,
		"released: claim "+claim.Name+" was deleted (reclaimPolicy Retain)"), r.Now.Now(), false)
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("marking DeploymentTarget %s Released: %w", dt.Name, client.IgnoreNotFound(err))
	}
	r.Recorder.Eventf(claim, corev1.EventTypeNormal, "DeploymentTargetReleased",
		"Released DeploymentTarget %s (reclaimPolicy Retain)", dt.Name)
	return nil
}

// condition is the ErrorOccurred condition of a claim or target.
func condition(generation int64, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	if strings.TrimSpace(message) == "" {
		message = reason
	}
	return metav1.Condition{
		Type: as.DeploymentTargetConditionErrorOccurred, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	}
}
