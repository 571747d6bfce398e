package gitopsdeployment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// mirrorAppConditions copies the Application's conditions (type = reason = Argo CD's
// type) and resolves the ones Argo CD no longer reports. Not through the
// kernel, by design: they are Argo CD's findings, mirrored as the original
// service did, without a Warning Event of ours (Argo CD records its own).
func mirrorAppConditions(conds []v1.GitOpsDeploymentCondition, app []argocd.AppCondition, now metav1.Time) []v1.GitOpsDeploymentCondition {
	present := map[v1.GitOpsConditionType]bool{}
	for _, c := range app {
		t := v1.GitOpsConditionType(c.Type)
		present[t] = true
		conds = v1.SetCondition(conds, t, v1.GitOpsConditionStatusTrue, v1.GitOpsConditionReason(c.Type), c.Message, now)
	}
	for _, c := range append([]v1.GitOpsDeploymentCondition(nil), conds...) {
		if c.Type != v1.GitOpsDeploymentConditionErrorOccurred && c.Type != kernel.ConditionReady && !present[c.Type] {
			conds = v1.ResolveCondition(conds, c.Type, now)
		}
	}
	return conds
}
