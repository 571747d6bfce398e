package deploymenttarget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// The phase and its condition: False/Success while fine, True with the
// refusal once Failed, and one Warning Event when it turns Failed, not for
// each later message.
func TestSetPhase(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec, Now: func() time.Time { return now }}
	dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dt", Generation: 2}}
	cond := func() *metav1.Condition {
		c := meta.FindStatusCondition(dt.Status.Conditions, as.DeploymentTargetConditionErrorOccurred)
		require.NotNil(t, c)
		return c
	}
	steps := []struct {
		name    string
		phase   as.DeploymentTargetPhase
		refusal *kernel.Refusal
		message string
		status  metav1.ConditionStatus
		reason  string
		events  int
	}{
		{"available", as.DeploymentTargetPhaseAvailable, nil, "available for a claim", metav1.ConditionFalse, as.DeploymentTargetReasonSuccess, 0},
		{"released", as.DeploymentTargetPhaseReleased, nil, "released: claim c is gone (reclaimPolicy Retain)", metav1.ConditionFalse, as.DeploymentTargetReasonSuccess, 0},
		{"failed", as.DeploymentTargetPhaseFailed, kernel.Refuse(as.DeploymentTargetReasonReleaseFailed, "releasing failed: a"),
			"releasing failed: a", metav1.ConditionTrue, as.DeploymentTargetReasonReleaseFailed, 1},
		{"still failing, another message", as.DeploymentTargetPhaseFailed, kernel.Refuse(as.DeploymentTargetReasonReleaseFailed, "releasing failed: b"),
			"releasing failed: b", metav1.ConditionTrue, as.DeploymentTargetReasonReleaseFailed, 0},
	}
	for _, s := range steps {
		r.setPhase(dt, s.phase, s.refusal, s.message)
		assert.Equal(t, s.phase, dt.Status.Phase, s.name)
		c := cond()
		assert.Equal(t, s.status, c.Status, s.name)
		assert.Equal(t, s.reason, c.Reason, s.name)
		assert.Equal(t, s.message, c.Message, s.name)
		assert.Equal(t, int64(2), c.ObservedGeneration, s.name)
		assert.Len(t, rec.Events, s.events, s.name)
		for range s.events {
			assert.Contains(t, <-rec.Events, "Warning "+as.DeploymentTargetReasonReleaseFailed)
		}
	}
}
