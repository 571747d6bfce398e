package deploymenttargetclaim

import (
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The binder's decisions, pure functions of what one pass read.

// candidates are the targets claim may bind to, in the order it tries them:
// a target already pre-bound to this claim (a provisioned one, or ours from a
// pass that stopped half way) first, then the oldest.
func candidates(claim *as.DeploymentTargetClaim, dts []*as.DeploymentTarget) []*as.DeploymentTarget {
	var out []*as.DeploymentTarget
	for _, dt := range dts {
		if mismatch(claim, dt) == "" {
			out = append(out, dt)
		}
	}
	slices.SortStableFunc(out, func(a, b *as.DeploymentTarget) int {
		if (a.Spec.ClaimRef == claim.Name) != (b.Spec.ClaimRef == claim.Name) {
			if a.Spec.ClaimRef == claim.Name {
				return -1
			}
			return 1
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out
}

// named decides about a claim whose targetName is set, given that target (nil
// when there is none): nil when the claim may be bound to it, else the
// claim's phase with a *kernel.Refusal or a *kernel.Waiting.
func named(claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) (as.DeploymentTargetClaimPhase, error) {
	name := claim.Spec.TargetName
	wasBound := claim.Status.Phase == as.DeploymentTargetClaimPhaseBound || claim.Status.Phase == as.DeploymentTargetClaimPhaseLost ||
		claim.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue
	gone := dt == nil || !dt.DeletionTimestamp.IsZero()
	switch {
	case wasBound && gone:
		return as.DeploymentTargetClaimPhaseLost, kernel.Refuse(as.DeploymentTargetReasonLost,
			"the DeploymentTarget %s bound to this claim was deleted", name)
	case wasBound && dt.Spec.ClaimRef != claim.Name:
		return as.DeploymentTargetClaimPhaseLost, kernel.Refuse(as.DeploymentTargetReasonLost,
			"the DeploymentTarget %s bound to this claim is now bound to claim %q", name, dt.Spec.ClaimRef)
	case gone:
		return as.DeploymentTargetClaimPhasePending, kernel.Wait(as.DeploymentTargetReasonWaitingForTarget, kernel.WaitingRetry,
			"waiting for the DeploymentTarget %s to exist", name)
	case dt.Spec.ClaimRef != "" && dt.Spec.ClaimRef != claim.Name:
		return as.DeploymentTargetClaimPhasePending, kernel.Refuse(as.DeploymentTargetReasonClaimedByAnother,
			"the DeploymentTarget %s is bound to another claim (%s)", name, dt.Spec.ClaimRef)
	}
	if why := mismatch(claim, dt); why != "" {
		return as.DeploymentTargetClaimPhasePending, kernel.Refuse(as.DeploymentTargetReasonMismatch,
			"the DeploymentTarget %s does not satisfy this claim: %s", name, why)
	}
	return "", nil
}

// concerns says whether a change of dt concerns claim: the claim it names,
// the claim naming it, and, when it is free, every unbound claim of its class.
func concerns(dt *as.DeploymentTarget, claim *as.DeploymentTargetClaim) bool {
	return claim.Name == dt.Spec.ClaimRef || claim.Spec.TargetName == dt.Name ||
		(dt.Spec.ClaimRef == "" && claim.Spec.TargetName == "" && claim.Spec.DeploymentTargetClassName == dt.Spec.DeploymentTargetClassName)
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

// bindingWritten says whether the claim already shows its binding to dt:
// targetName, bind-complete (and bound-by-controller when the binder chose
// the target), and the finalizer that reclaims the target.
func bindingWritten(claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget, chosen bool) bool {
	return claim.Spec.TargetName == dt.Name && claim.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue &&
		(!chosen || claim.Annotations[as.AnnBoundByController] == as.AnnBinderValueTrue) &&
		controllerutil.ContainsFinalizer(claim, as.FinalizerBinder)
}
