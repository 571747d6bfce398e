package promotionrun

import (
	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a run after a pass without a wait: Ready once completed
// successfully, False once completed otherwise (a completed run is never
// looked at again), else in progress.
func readiness(st as.PromotionRunStatus) kernel.Readiness {
	if st.State != as.PromotionRunStateCompleted {
		return kernel.Progressing("the promotion is %s", stateOrNew(st.State))
	}
	if st.CompletionResult == as.PromotionRunCompleteResultSuccess {
		return kernel.Done("PromotionSucceeded", "the promotion completed successfully")
	}
	msg := "the promotion failed"
	for _, c := range st.Conditions {
		if c.Type == as.PromotionRunConditionErrorOccurred {
			msg = c.Message
		}
	}
	return kernel.Failed("PromotionFailed", "%s", msg)
}

func stateOrNew(s as.PromotionRunState) string {
	if s == "" {
		return "not started"
	}
	return string(s)
}
