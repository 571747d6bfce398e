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

// What a target pre-bound to a claim, not Bound yet, becomes.
func TestBoundPhase(t *testing.T) {
	reserved := func(dt *as.DeploymentTarget) {
		dt.Annotations = map[string]string{as.AnnBoundByController: as.AnnBinderValueTrue}
	}
	claimOf := func(mutate func(*as.DeploymentTargetClaim)) *as.DeploymentTargetClaim {
		c := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "c",
			Annotations: map[string]string{as.AnnBindCompleted: as.AnnBinderValueTrue}},
			Spec: as.DeploymentTargetClaimSpec{TargetName: "dt"}}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		dtMutate func(*as.DeploymentTarget)
		claim    *as.DeploymentTargetClaim
		gone     bool
		want     as.DeploymentTargetPhase
	}{
		"the claim says bind-complete":                  {nil, claimOf(nil), false, as.DeploymentTargetPhaseBound},
		"reserved by the binder too":                    {reserved, claimOf(nil), false, as.DeploymentTargetPhaseBound},
		"not bind-complete yet":                         {reserved, claimOf(func(c *as.DeploymentTargetClaim) { c.Annotations = nil }), false, ""},
		"the claim, not bound yet, names another":       {reserved, claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "other"; c.Annotations = nil }), false, ""},
		"reserved by the binder, claim bound elsewhere": {reserved, claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "other" }), false, as.DeploymentTargetPhaseAvailable},
		"pre-bound by a user, claim bound elsewhere":    {nil, claimOf(func(c *as.DeploymentTargetClaim) { c.Spec.TargetName = "other" }), false, ""},
		"the claim is being deleted":                    {reserved, claimOf(func(c *as.DeploymentTargetClaim) { c.DeletionTimestamp = &now }), false, ""},
		"reserved by the binder, claim gone":            {reserved, &as.DeploymentTargetClaim{}, true, as.DeploymentTargetPhaseAvailable},
		"pre-bound by a user, claim not there yet":      {nil, &as.DeploymentTargetClaim{}, true, ""},
	} {
		dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Name: "dt"}, Spec: as.DeploymentTargetSpec{ClaimRef: "c"}}
		if tc.dtMutate != nil {
			tc.dtMutate(dt)
		}
		assert.Equal(t, tc.want, boundPhase(dt, tc.claim, tc.gone), name)
	}
}
