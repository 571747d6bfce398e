package deploymenttarget

import (
	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a target by its phase, for a pass without a refusal or a
// wait: Ready when it can serve a claim or does (Available, Bound); False
// once Released (its claim is gone and it serves none until an admin frees
// it) or Failed; else in progress.
func readiness(phase as.DeploymentTargetPhase) kernel.Readiness {
	switch phase {
	case as.DeploymentTargetPhaseAvailable, as.DeploymentTargetPhaseBound:
		return kernel.Done(string(phase), "the target is %s", phase)
	case as.DeploymentTargetPhaseReleased, as.DeploymentTargetPhaseFailed:
		return kernel.Failed(string(phase), "the target is %s", phase)
	}
	return kernel.Progressing("the target is %s", phaseOrPending(phase))
}

func phaseOrPending(p as.DeploymentTargetPhase) as.DeploymentTargetPhase {
	if p == "" {
		return as.DeploymentTargetPhasePending
	}
	return p
}
