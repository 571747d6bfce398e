package snapshotenvironmentbinding

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a binding from its AllComponentsDeployed condition and its
// components' health, for a pass without a refusal: Ready once every
// Component is deployed, False while Argo CD refuses a sync or a Component is
// Degraded, else in progress.
func readiness(all *metav1.Condition, deployed []as.BindingStatusGitOpsDeployment) kernel.Readiness {
	for _, d := range deployed {
		if d.GitOpsDeploymentHealthStatus == "Degraded" {
			return kernel.Failed("Degraded", "Component %s is Degraded", d.ComponentName)
		}
	}
	switch {
	case all == nil:
		return kernel.Progressing("no component is deployed yet")
	case all.Status == metav1.ConditionTrue:
		return kernel.Done(as.ComponentDeploymentConditionAllComponentsDeployed, "%s", all.Message)
	case all.Reason == as.ComponentDeploymentConditionErrorOccurred:
		return kernel.Failed("SyncError", "%s", all.Message)
	}
	return kernel.Progressing("%s", all.Message)
}
