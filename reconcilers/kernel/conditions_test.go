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
	kernel.SetError(rec, obj, &conds, "other", t1)
	assert.Len(t, rec.Events, 1)
	<-rec.Events
	kernel.SetError(rec, obj, &conds, "no", t1)
	assert.Len(t, rec.Events, 1)
	<-rec.Events
	assert.True(t, kernel.SetErrorReason(rec, obj, &conds, "NamespaceNotATenant", "no", t1))
	assert.Len(t, rec.Events, 1)
	assert.Len(t, conds, 1)
}
