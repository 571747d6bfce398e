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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// RetryInterval is how often a claim the user must fix is looked at again.
const RetryInterval = 30 * time.Second

// errConflict: another writer changed the target or claim under us; the pass
// starts again from fresh reads.
var errConflict = errors.New("conflict")

// Reconciler binds DeploymentTargetClaims.
type Reconciler struct {
	Client client.Client
	// APIReader reads targets uncached: a binding decision never rests on a
	// cache that may be behind another claim's binding.
	APIReader    client.Reader
	Recorder     record.EventRecorder
	Provisioners provisioner.Set
	// Now is the clock of condition times; tests may set it.
	Now kernel.Clock
}

// outcome is what one pass decided: the claim's phase and condition; a
// refusal is the user's to fix (Warning Event, slow retry).
type outcome struct {
	phase   as.DeploymentTargetClaimPhase
	status  metav1.ConditionStatus
	reason  string
	message string
	requeue time.Duration
}

func waiting(phase as.DeploymentTargetClaimPhase, reason, format string, args ...any) outcome {
	return outcome{phase: phase, status: metav1.ConditionFalse, reason: reason, message: fmt.Sprintf(format, args...)}
}

func refused(phase as.DeploymentTargetClaimPhase, reason, format string, args ...any) outcome {
	return outcome{phase: phase, status: metav1.ConditionTrue, reason: reason, message: fmt.Sprintf(format, args...), requeue: RetryInterval}
}

// Reconcile: fetch -> ensure the finalizer -> reconcile or reconcileDelete ->
// one deferred status patch, written only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	claim := &as.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, claim)
	}
	if err := kernel.AddFinalizer(ctx, r.Client, claim, as.FinalizerBinder); err != nil {
		return ctrl.Result{}, err
	}
	patcher := kernel.NewStatusPatcher(r.Client, claim)
	var out outcome
	defer func() {
		if retErr == nil && out.reason != "" {
			retErr = r.writeStatus(ctx, patcher, claim, out)
		}
	}()
	var err error
	out, err = r.reconcile(ctx, claim)
	if errors.Is(err, errConflict) {
		return ctrl.Result{Requeue: true}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: out.requeue}, nil
}

// reconcile decides the claim's binding.
func (r *Reconciler) reconcile(ctx context.Context, claim *as.DeploymentTargetClaim) (outcome, error) {
	if claim.Spec.TargetName != "" {
		return r.reconcileNamed(ctx, claim)
	}
	dts, err := r.targets(ctx, claim.Namespace)
	if err != nil {
		return outcome{}, err
	}
	// A target already pre-bound to this claim (a provisioned one, or ours
	// from a pass that stopped half way) comes first.
	slices.SortStableFunc(dts, func(a, b *as.DeploymentTarget) int {
		if (a.Spec.ClaimRef == claim.Name) != (b.Spec.ClaimRef == claim.Name) {
			if a.Spec.ClaimRef == claim.Name {
				return -1
			}
			return 1
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	for _, dt := range dts {
		if mismatch(claim, dt) != "" {
			continue
		}
		err := r.bind(ctx, claim, dt, true)
		if errors.Is(err, errTaken) {
			continue
		}
		if err != nil {
			return outcome{}, err
		}
		return bound(dt), nil
	}
	return r.provision(ctx, claim)
}

// reconcileNamed handles a claim whose targetName is set: by the user (bind to
// exactly that target) or by us (keep it bound, or Lost).
func (r *Reconciler) reconcileNamed(ctx context.Context, claim *as.DeploymentTargetClaim) (outcome, error) {
	name := claim.Spec.TargetName
	wasBound := claim.Status.Phase == as.DeploymentTargetClaimPhaseBound || claim.Status.Phase == as.DeploymentTargetClaimPhaseLost ||
		claim.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue
	// A path-like name ("../other/target") is no object name: the client would
	// refuse the read on every retry and the claim would show nothing.
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return refused(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonMismatch,
			"spec.targetName %q is not the name of a DeploymentTarget in this namespace", name), nil
	}
	dt := &as.DeploymentTarget{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: name}, dt)
	if err != nil && !apierrors.IsNotFound(err) {
		return outcome{}, err
	}
	gone := apierrors.IsNotFound(err) || !dt.DeletionTimestamp.IsZero()
	switch {
	case wasBound && gone:
		return refused(as.DeploymentTargetClaimPhaseLost, as.DeploymentTargetReasonLost,
			"the DeploymentTarget %s bound to this claim was deleted", name), nil
	case wasBound && dt.Spec.ClaimRef != claim.Name:
		return refused(as.DeploymentTargetClaimPhaseLost, as.DeploymentTargetReasonLost,
			"the DeploymentTarget %s bound to this claim is now bound to claim %q", name, dt.Spec.ClaimRef), nil
	case gone:
		return waiting(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonWaitingForTarget,
			"waiting for the DeploymentTarget %s to exist", name), nil
	case dt.Spec.ClaimRef != "" && dt.Spec.ClaimRef != claim.Name:
		return refused(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonClaimedByAnother,
			"the DeploymentTarget %s is bound to another claim (%s)", name, dt.Spec.ClaimRef), nil
	}
	if why := mismatch(claim, dt); why != "" {
		return refused(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonMismatch,
			"the DeploymentTarget %s does not satisfy this claim: %s", name, why), nil
	}
	err = r.bind(ctx, claim, dt, false)
	if errors.Is(err, errTaken) {
		return outcome{}, errConflict
	}
	if err != nil {
		return outcome{}, err
	}
	return bound(dt), nil
}

func bound(dt *as.DeploymentTarget) outcome {
	return waiting(as.DeploymentTargetClaimPhaseBound, as.DeploymentTargetReasonSuccess, "bound to DeploymentTarget %s", dt.Name)
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

// mismatch says why dt cannot be bound to claim ("" when it can): the same
// class, phase empty or Available, credentials set, and claimRef empty or
// naming the claim; a claim marked for dynamic provisioning takes only a
// target pre-bound to it.
func mismatch(claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) string {
	c := dt.Spec.KubernetesClusterCredentials
	switch {
	case !dt.DeletionTimestamp.IsZero():
		return "it is being deleted"
	case dt.Spec.DeploymentTargetClassName != claim.Spec.DeploymentTargetClassName:
		return fmt.Sprintf("its class is %q, the claim's is %q", dt.Spec.DeploymentTargetClassName, claim.Spec.DeploymentTargetClassName)
	case dt.Status.Phase != "" && dt.Status.Phase != as.DeploymentTargetPhaseAvailable && !(dt.Status.Phase == as.DeploymentTargetPhaseBound && dt.Spec.ClaimRef == claim.Name):
		return fmt.Sprintf("its phase is %s", dt.Status.Phase)
	case c.APIURL == "" || c.ClusterCredentialsSecret == "" || c.DefaultNamespace == "":
		return "its kubernetesCredentials are incomplete (apiURL, clusterCredentialsSecret and defaultNamespace are required)"
	case dt.Spec.ClaimRef != "" && dt.Spec.ClaimRef != claim.Name:
		return fmt.Sprintf("it is bound to claim %q", dt.Spec.ClaimRef)
	case claim.Annotations[as.AnnTargetProvisioner] != "" && dt.Spec.ClaimRef != claim.Name:
		return "the claim waits for a dynamically provisioned target"
	}
	return ""
}

// errTaken: the target was bound to another claim meanwhile.
var errTaken = errors.New("target taken")

// bind binds claim and dt. The target's claimRef is written first, with
// optimistic concurrency (the resourceVersion just read): of two claims racing
// for one target exactly one wins, and a pass that stops half way finds its
// target again by claimRef. Then the claim's targetName; the phases and the
// bind-complete annotation follow in the deferred status write.
func (r *Reconciler) bind(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget, chosen bool) error {
	if dt.Spec.ClaimRef != claim.Name {
		if err := r.current(ctx, claim); err != nil {
			return err
		}
		if err := r.reserve(ctx, claim, dt); err != nil {
			return err
		}
	}
	if dt.Status.Phase != as.DeploymentTargetPhaseBound {
		orig := dt.DeepCopy()
		dt.Status.Phase = as.DeploymentTargetPhaseBound
		meta.SetStatusCondition(&dt.Status.Conditions, condition(dt.Generation, metav1.ConditionFalse, as.DeploymentTargetReasonSuccess, "bound to claim "+claim.Name))
		if err := r.Client.Status().Patch(ctx, dt, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("marking DeploymentTarget %s Bound: %w", dt.Name, client.IgnoreNotFound(err))
		}
	}
	if claim.Spec.TargetName == dt.Name && (!chosen || claim.Annotations[as.AnnBoundByController] == as.AnnBinderValueTrue) {
		return nil
	}
	status := claim.Status
	patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
	claim.Spec.TargetName = dt.Name
	if chosen {
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, as.AnnBoundByController, as.AnnBinderValueTrue)
	}
	if err := r.Client.Patch(ctx, claim, patch); err != nil {
		// The target stays pre-bound to this claim: the next pass takes it.
		if apierrors.IsConflict(err) {
			return errConflict
		}
		return fmt.Errorf("writing targetName of claim %s: %w", claim.Name, err)
	}
	claim.Status = status
	r.Recorder.Eventf(claim, corev1.EventTypeNormal, "Bound", "Bound to DeploymentTarget %s", dt.Name)
	return nil
}

// reserve writes the target's claimRef with optimistic concurrency. A conflict
// is not always another claim: the target's own reconciler writes its first
// phase just as a claim made right after it comes. So the target is read
// again and tried again while it still suits the claim; taken, or gone, it is
// errTaken (the caller tries the next one).
func (r *Reconciler) reserve(ctx context.Context, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) error {
	reread := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if reread {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(dt), dt); err != nil {
				return err
			}
			if mismatch(claim, dt) != "" {
				return errTaken
			}
		}
		reread = true
		updated := dt.DeepCopy()
		updated.Spec.ClaimRef = claim.Name
		if err := r.Client.Update(ctx, updated); err != nil {
			return err
		}
		*dt = *updated
		return nil
	})
	switch {
	case err == nil || errors.Is(err, errTaken):
		return err
	case apierrors.IsNotFound(err):
		return errTaken
	case apierrors.IsConflict(err):
		return errConflict
	}
	return fmt.Errorf("binding DeploymentTarget %s: %w", dt.Name, err)
}

// current returns errConflict unless the API server's claim has the spec and
// provisioner mark the pass decided on. A claim read from a cache that is
// behind may miss its own targetName or mark: reserving a target for it would
// keep that target from everyone (the claim write then fails, the target
// stays pre-bound to it). The resourceVersion cannot tell: adding the
// finalizer moves it on and leaves the rest as read.
func (r *Reconciler) current(ctx context.Context, claim *as.DeploymentTargetClaim) error {
	fresh := &as.DeploymentTargetClaim{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(claim), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return errConflict
		}
		return fmt.Errorf("reading claim %s: %w", claim.Name, err)
	}
	if fresh.UID != claim.UID || !fresh.DeletionTimestamp.IsZero() || fresh.Spec != claim.Spec ||
		fresh.Annotations[as.AnnTargetProvisioner] != claim.Annotations[as.AnnTargetProvisioner] {
		return errConflict
	}
	return nil
}

// provision handles a claim no existing target satisfies.
func (r *Reconciler) provision(ctx context.Context, claim *as.DeploymentTargetClaim) (outcome, error) {
	class := &as.DeploymentTargetClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: string(claim.Spec.DeploymentTargetClassName)}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return refused(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonClassNotFound,
				"the DeploymentTargetClass %q does not exist", claim.Spec.DeploymentTargetClassName), nil
		}
		return outcome{}, err
	}
	name := class.Spec.Provisioner
	if claim.Annotations[as.AnnTargetProvisioner] != string(name) {
		patch := client.MergeFrom(claim.DeepCopy())
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, as.AnnTargetProvisioner, string(name))
		status := claim.Status
		if err := r.Client.Patch(ctx, claim, patch); err != nil {
			return outcome{}, fmt.Errorf("marking claim %s for provisioning: %w", claim.Name, err)
		}
		claim.Status = status
	}
	p := r.Provisioners[name]
	if p == nil {
		// Maybe an external provisioner's job (as with PersistentVolumes): wait.
		return waiting(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonWaitingForProvisioner,
			"waiting for provisioner %s, which this GitOps Service does not run (or whose API is not installed), to provision a DeploymentTarget", name), nil
	}
	dt, err := p.Provision(ctx, claim, class)
	var refusal *kernel.Refusal
	if errors.As(err, &refusal) {
		return refused(as.DeploymentTargetClaimPhasePending, refusal.Reason, "%s", refusal.Message), nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("provisioner %s: %w", name, err)
	}
	if dt == nil {
		out := waiting(as.DeploymentTargetClaimPhasePending, as.DeploymentTargetReasonWaitingForProvisioner,
			"waiting for provisioner %s to provision a DeploymentTarget", name)
		out.requeue = provisioner.PollInterval
		return out, nil
	}
	if err := r.bind(ctx, claim, dt, true); err != nil {
		if errors.Is(err, errTaken) {
			return outcome{}, errConflict
		}
		return outcome{}, err
	}
	return bound(dt), nil
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
			return ctrl.Result{RequeueAfter: provisioner.PollInterval}, nil
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
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("releasing DeploymentTarget %s: %w", dt.Name, client.IgnoreNotFound(err))
	}
	orig := updated.DeepCopy()
	updated.Status.Phase = as.DeploymentTargetPhaseReleased
	meta.SetStatusCondition(&updated.Status.Conditions, condition(updated.Generation, metav1.ConditionFalse, as.DeploymentTargetReasonSuccess,
		"released: claim "+claim.Name+" was deleted (reclaimPolicy Retain)"))
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("marking DeploymentTarget %s Released: %w", dt.Name, client.IgnoreNotFound(err))
	}
	r.Recorder.Eventf(claim, corev1.EventTypeNormal, "DeploymentTargetReleased",
		"Released DeploymentTarget %s (reclaimPolicy Retain)", dt.Name)
	return nil
}

// writeStatus writes the claim's phase and condition when they changed, with
// a Warning Event when a refusal appears or changes; once Bound is recorded,
// the bind-complete annotation follows.
func (r *Reconciler) writeStatus(ctx context.Context, patcher *kernel.StatusPatcher, claim *as.DeploymentTargetClaim, out outcome) (err error) {
	claim.Status.Phase = out.phase
	kernel.SetCondition(r.Recorder, claim, &claim.Status.Conditions, condition(claim.Generation, out.status, out.reason, out.message),
		r.Now.Now(), out.status == metav1.ConditionTrue)
	if patcher.Patch(ctx, claim, &err); err != nil {
		return err
	}
	if out.phase == as.DeploymentTargetClaimPhaseBound && claim.Annotations[as.AnnBindCompleted] != as.AnnBinderValueTrue {
		patch := client.MergeFrom(claim.DeepCopy())
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, as.AnnBindCompleted, as.AnnBinderValueTrue)
		return client.IgnoreNotFound(r.Client.Patch(ctx, claim, patch))
	}
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
