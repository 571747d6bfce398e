package binding

import (
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Reasons of a binding's refusals that the original service reported as its
// catch-all ErrorOccurred: the bindingConditions keep that reason (the
// seed's), the Warning Event and Ready say which failure it is (docs/reference.md,
// "Reasons of failures"). The original service's own specific reasons (GitOpsRepoNotReady,
// DuplicateComponents, WaitingForComponentStatus, ...) are used as they are.
// A missing input is <Kind>NotFound (ApplicationNotFound, SnapshotNotFound,
// EnvironmentNotFound).
const (
	ReasonInvalidParameter               = "InvalidParameter"
	ReasonInvalidReplicas                = "InvalidReplicas"
	ReasonInvalidImage                   = "InvalidImage"
	ReasonInvalidEnv                     = "InvalidEnv"
	ReasonSnapshotOfAnotherApplication   = "SnapshotOfAnotherApplication"
	ReasonDeploymentTargetClaimNotFound  = "DeploymentTargetClaimNotFound"
	ReasonDeploymentTargetClaimNotBound  = "DeploymentTargetClaimNotBound"
	ReasonDeploymentTargetNotFound       = "DeploymentTargetNotFound"
	ReasonManagedEnvironmentNotConnected = "ManagedEnvironmentNotConnected"
	ReasonApplicationNameCollision       = "ApplicationNameCollision"
)

// Refuse is a binding refusal of the failure reason shown in its
// bindingConditions as the seed's ErrorOccurred.
func Refuse(reason, format string, args ...any) *kernel.Refusal {
	return kernel.Refuse(reason, format, args...).InCondition(appstudiov1alpha1.BindingReasonErrorOccurred)
}
