package deploymenttargetclaim

import (
	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a claim whose pass ended without a refusal or a wait: Ready
// once Bound (what an Environment using it waits for), else in progress.
func readiness(claim *as.DeploymentTargetClaim, phase as.DeploymentTargetClaimPhase) kernel.Readiness {
	if phase == as.DeploymentTargetClaimPhaseBound {
		return kernel.Done(string(as.DeploymentTargetClaimPhaseBound), "bound to DeploymentTarget %s", claim.Spec.TargetName)
	}
	return kernel.Progressing("the claim is %s", phase)
}
