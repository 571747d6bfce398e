package kernel

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// SetCondition sets c in conds. Its transition time (now) moves only when
// its status flips, so observing the same state again changes nothing. With
// warn, a Warning Event with c's reason and message is emitted when the
// condition is new or its status, reason or message changed. It returns
// whether any of those changed.
func SetCondition(rec record.EventRecorder, obj runtime.Object, conds *[]metav1.Condition, c metav1.Condition, now metav1.Time, warn bool) bool {
	before := meta.FindStatusCondition(*conds, c.Type)
	changed := before == nil || before.Status != c.Status || before.Reason != c.Reason || before.Message != c.Message
	if changed && warn {
		warningEvent(rec, obj, c.Reason, c.Message)
	}
	c.LastTransitionTime = now
	meta.SetStatusCondition(conds, c)
	return changed
}

// SetError records msg on the original service's ErrorOccurred condition,
// with a Warning Event when it changed; msg "" resolves it.
func SetError(rec record.EventRecorder, obj runtime.Object, conds *[]v1.GitOpsDeploymentCondition, msg string, now metav1.Time) {
	if msg == "" {
		*conds = v1.ResolveCondition(*conds, v1.GitOpsDeploymentConditionErrorOccurred, now)
		return
	}
	SetErrorReason(rec, obj, conds, string(v1.GitOpsDeploymentReasonErrorOccurred), msg, now)
}

// SetErrorReason is SetCondition for the GitOps kinds' ErrorOccurred
// condition with a reason of the caller's (SetError's is always
// ErrorOccurred): True with reason and msg, a Warning Event when its status,
// reason or message changed. It returns whether any of those changed.
func SetErrorReason(rec record.EventRecorder, obj runtime.Object, conds *[]v1.GitOpsDeploymentCondition, reason, msg string, now metav1.Time) bool {
	changed := true
	for _, c := range *conds {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred {
			changed = c.Status != v1.GitOpsConditionStatusTrue || string(c.Reason) != reason || c.Message != msg
		}
	}
	if changed {
		warningEvent(rec, obj, reason, msg)
	}
	*conds = v1.SetCondition(*conds, v1.GitOpsDeploymentConditionErrorOccurred, v1.GitOpsConditionStatusTrue, v1.GitOpsConditionReason(reason), msg, now)
	return changed
}

// ErrorMessage is the message of a True ErrorOccurred condition, or "".
func ErrorMessage(conds []v1.GitOpsDeploymentCondition) string {
	for _, c := range conds {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue {
			return c.Message
		}
	}
	return ""
}
