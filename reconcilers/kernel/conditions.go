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
	event := ""
	if warn {
		event = c.Reason
	}
	return SetConditionWarning(rec, obj, conds, c, event, now)
}

// SetConditionWarning is SetCondition whose Warning Event (none when event is
// "") has the reason event rather than c's: a condition whose reason the
// seed fixes (ErrorOccurred) still gets an Event that says which failure it is
// (the Refusal's Reason).
func SetConditionWarning(rec record.EventRecorder, obj runtime.Object, conds *[]metav1.Condition, c metav1.Condition, event string, now metav1.Time) bool {
	before := meta.FindStatusCondition(*conds, c.Type)
	changed := before == nil || before.Status != c.Status || before.Reason != c.Reason || before.Message != c.Message
	if changed && event != "" {
		Warning(rec, obj, event, c.Message)
	}
	c.LastTransitionTime = now
	meta.SetStatusCondition(conds, c)
	return changed
}

// SetError records refusal on the original service's ErrorOccurred condition,
// whose reason is always ErrorOccurred (the seed's), with a Warning Event of
// the refusal's own Reason (which failure it is) when the condition changed;
// a nil refusal resolves it.
func SetError(rec record.EventRecorder, obj runtime.Object, conds *[]v1.GitOpsDeploymentCondition, refusal *Refusal, now metav1.Time) {
	if refusal == nil {
		*conds = v1.ResolveCondition(*conds, v1.GitOpsDeploymentConditionErrorOccurred, now)
		return
	}
	setError(rec, obj, conds, string(v1.GitOpsDeploymentReasonErrorOccurred), refusal.Reason, refusal.Message, now)
}

// SetErrorReason is SetCondition for the GitOps kinds' ErrorOccurred
// condition with a reason of the caller's, also the Event's: True with
// reason and msg, a Warning Event when its status, reason or message changed.
// It returns whether any of those changed.
func SetErrorReason(rec record.EventRecorder, obj runtime.Object, conds *[]v1.GitOpsDeploymentCondition, reason, msg string, now metav1.Time) bool {
	return setError(rec, obj, conds, reason, reason, msg, now)
}

func setError(rec record.EventRecorder, obj runtime.Object, conds *[]v1.GitOpsDeploymentCondition, reason, event, msg string, now metav1.Time) bool {
	changed := true
	for _, c := range *conds {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred {
			changed = c.Status != v1.GitOpsConditionStatusTrue || string(c.Reason) != reason || c.Message != msg
		}
	}
	if changed {
		Warning(rec, obj, event, msg)
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
