package gitopsdeployment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// setCondition sets a condition by type. Times move only when something changed,
// so that observing the same state again writes nothing.
func setCondition(conds []v1.GitOpsDeploymentCondition, t v1.GitOpsConditionType, status v1.GitOpsConditionStatus, reason v1.GitOpsConditionReason, msg string, now metav1.Time) []v1.GitOpsDeploymentCondition {
	for i := range conds {
		c := &conds[i]
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return conds
		}
		if c.Status != status {
			c.LastTransitionTime = &now
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, now
		return conds
	}
	return append(conds, v1.GitOpsDeploymentCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: &now,
	})
}

// resolveCondition turns an existing condition False with reason <Type>Resolved;
// a condition that never appeared is not added.
func resolveCondition(conds []v1.GitOpsDeploymentCondition, t v1.GitOpsConditionType, now metav1.Time) []v1.GitOpsDeploymentCondition {
	for i := range conds {
		if conds[i].Type == t {
			return setCondition(conds, t, v1.GitOpsConditionStatusFalse, v1.GitOpsConditionReason(string(t)+v1.ResolvedSuffix), "", now)
		}
	}
	return conds
}

// setError records (msg != "") or resolves (msg == "") ErrorOccurred.
func setError(conds []v1.GitOpsDeploymentCondition, msg string, now metav1.Time) []v1.GitOpsDeploymentCondition {
	if msg == "" {
		return resolveCondition(conds, v1.GitOpsDeploymentConditionErrorOccurred, now)
	}
	return setCondition(conds, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, v1.GitOpsDeploymentReasonErrorOccurred, msg, now)
}

// mirrorAppConditions copies the Application's conditions (type = reason = Argo CD's
// type) and resolves the ones Argo CD no longer reports.
func mirrorAppConditions(conds []v1.GitOpsDeploymentCondition, app []argocd.AppCondition, now metav1.Time) []v1.GitOpsDeploymentCondition {
	present := map[v1.GitOpsConditionType]bool{}
	for _, c := range app {
		t := v1.GitOpsConditionType(c.Type)
		present[t] = true
		conds = setCondition(conds, t, v1.GitOpsConditionStatusTrue, v1.GitOpsConditionReason(c.Type), c.Message, now)
	}
	for _, c := range append([]v1.GitOpsDeploymentCondition(nil), conds...) {
		if c.Type != v1.GitOpsDeploymentConditionErrorOccurred && !present[c.Type] {
			conds = resolveCondition(conds, c.Type, now)
		}
	}
	return conds
}
