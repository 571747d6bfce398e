package kernel

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

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
