package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SetCondition sets a condition by type. Times move only when something changed,
// so that observing the same state again writes nothing.
func SetCondition(conds []GitOpsDeploymentCondition, t GitOpsConditionType, status GitOpsConditionStatus, reason GitOpsConditionReason, msg string, now metav1.Time) []GitOpsDeploymentCondition {
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
	return append(conds, GitOpsDeploymentCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: &now,
	})
}

// ResolveCondition turns an existing condition False with reason <Type>Resolved;
// a condition that never appeared is not added.
func ResolveCondition(conds []GitOpsDeploymentCondition, t GitOpsConditionType, now metav1.Time) []GitOpsDeploymentCondition {
	for i := range conds {
		if conds[i].Type == t {
			return SetCondition(conds, t, GitOpsConditionStatusFalse, GitOpsConditionReason(string(t)+ResolvedSuffix), "", now)
		}
	}
	return conds
}
