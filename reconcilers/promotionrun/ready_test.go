package promotionrun

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestReadiness(t *testing.T) {
	failed := []metav1.Condition{{Type: as.PromotionRunConditionErrorOccurred, Status: metav1.ConditionTrue, Message: "timed out"}}
	cases := []struct {
		name    string
		st      as.PromotionRunStatus
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"new", as.PromotionRunStatus{}, metav1.ConditionUnknown, "Progressing", "the promotion is not started"},
		{"active", as.PromotionRunStatus{State: as.PromotionRunStateActive}, metav1.ConditionUnknown, "Progressing", "the promotion is Active"},
		{"succeeded", as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultSuccess}, metav1.ConditionTrue, "PromotionSucceeded", "the promotion completed successfully"},
		{"failed", as.PromotionRunStatus{State: as.PromotionRunStateCompleted, CompletionResult: as.PromotionRunCompleteResultFailure, Conditions: failed}, metav1.ConditionFalse, "PromotionFailed", "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := readiness(c.st)
			if got.Status != c.status || got.Reason != c.reason || got.Message != c.message {
				t.Fatalf("got %+v, want %s/%s/%q", got, c.status, c.reason, c.message)
			}
		})
	}
}
