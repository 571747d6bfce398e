package kernel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestSetErrorReason(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	rec := record.NewFakeRecorder(10)
	var conds []v1.GitOpsDeploymentCondition
	obj := &v1.GitOpsDeployment{}

	assert.True(t, kernel.SetErrorReason(rec, obj, &conds, "NamespaceNotATenant", "no", t0))
	assert.Equal(t, "Warning NamespaceNotATenant no", <-rec.Events)
	assert.Equal(t, v1.GitOpsConditionReason("NamespaceNotATenant"), conds[0].Reason)
	assert.Equal(t, v1.GitOpsConditionStatusTrue, conds[0].Status)

	assert.False(t, kernel.SetErrorReason(rec, obj, &conds, "NamespaceNotATenant", "no", t1), "the same again changes nothing")
	assert.Empty(t, rec.Events)
	assert.Equal(t, t0, conds[0].LastProbeTime)

	// The same message under another reason (e.g. the original ErrorOccurred) is a change.
	kernel.SetError(rec, obj, &conds, kernel.Refuse("InvalidSource", "other"), t1)
	assert.Len(t, rec.Events, 1)
	<-rec.Events
	kernel.SetError(rec, obj, &conds, kernel.Refuse("InvalidSource", "no"), t1)
	assert.Len(t, rec.Events, 1)
	<-rec.Events
	assert.True(t, kernel.SetErrorReason(rec, obj, &conds, "NamespaceNotATenant", "no", t1))
	assert.Len(t, rec.Events, 1)
	assert.Len(t, conds, 1)
}

// SetError keeps the seed's reason on the condition and names the failure in
// the Event; a nil refusal resolves the condition without an Event.
func TestSetErrorEventReason(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := record.NewFakeRecorder(10)
	var conds []v1.GitOpsDeploymentCondition
	obj := &v1.GitOpsDeployment{}

	kernel.SetError(rec, obj, &conds, kernel.Refuse("InvalidDestination", "elsewhere"), now)
	assert.Equal(t, "Warning InvalidDestination elsewhere", <-rec.Events)
	assert.Equal(t, v1.GitOpsDeploymentReasonErrorOccurred, conds[0].Reason)
	assert.Equal(t, v1.GitOpsConditionStatusTrue, conds[0].Status)

	kernel.SetError(rec, obj, &conds, kernel.Refuse("ManagedEnvironmentNotFound", "elsewhere"), now)
	assert.Empty(t, rec.Events, "the condition did not change: no second Event")

	kernel.SetError(rec, obj, &conds, nil, now)
	assert.Empty(t, rec.Events)
	assert.Equal(t, v1.GitOpsConditionStatusFalse, conds[0].Status)
	assert.Equal(t, v1.GitOpsConditionReason("ErrorOccurredResolved"), conds[0].Reason)
}

// SetConditionWarning: the condition keeps its reason, the Event has the one given.
func TestSetConditionWarning(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := record.NewFakeRecorder(10)
	var conds []metav1.Condition
	obj := &v1.GitOpsDeployment{}
	c := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "ErrorOccurred", Message: "m"}

	assert.True(t, kernel.SetConditionWarning(rec, obj, &conds, c, "SnapshotNotFound", now))
	assert.Equal(t, "Warning SnapshotNotFound m", <-rec.Events)
	assert.Equal(t, "ErrorOccurred", conds[0].Reason)
	assert.False(t, kernel.SetConditionWarning(rec, obj, &conds, c, "SnapshotNotFound", now))
	c.Message = "n"
	assert.True(t, kernel.SetConditionWarning(rec, obj, &conds, c, "", now))
	assert.Empty(t, rec.Events, "no event reason: no Event")
}

func TestRefusalConditionReason(t *testing.T) {
	assert.Equal(t, "SecretNotFound", kernel.Refuse("SecretNotFound", "m").ConditionReason())
	r := kernel.Refuse("InvalidSource", "m").InCondition("ErrorOccurred")
	assert.Equal(t, "ErrorOccurred", r.ConditionReason())
	assert.Equal(t, "InvalidSource", r.Reason)
}
