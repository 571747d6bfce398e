package nontenant

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// Every kind gets its error condition with our reason, one Warning Event the
// first time, and nothing again when it already has it.
func TestRefuseEveryKind(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Minute))
	const msg = `namespace "kube-system" is not a GitOps Service tenant`
	for _, kind := range Kinds() {
		obj := kind.DeepCopyObject().(client.Object)
		obj.SetGeneration(2)
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			assert.True(t, refuse(rec, obj, msg, now))
			require.Len(t, rec.Events, 1)
			assert.Equal(t, "Warning "+Reason+" "+msg, <-rec.Events)
			assertRefused(t, obj, msg)

			assert.False(t, refuse(rec, obj, msg, later), "refused again: no change")
			assert.Empty(t, rec.Events, "no second Event")
		})
	}
}

func assertRefused(t *testing.T, obj client.Object, msg string) {
	t.Helper()
	gitops := func(conds []v1.GitOpsDeploymentCondition) {
		require.Len(t, conds, 1)
		assert.Equal(t, v1.GitOpsDeploymentConditionErrorOccurred, conds[0].Type)
		assert.Equal(t, v1.GitOpsConditionStatusTrue, conds[0].Status)
		assert.Equal(t, v1.GitOpsConditionReason(Reason), conds[0].Reason)
		assert.Equal(t, msg, conds[0].Message)
	}
	std := func(conds []metav1.Condition, typ string, status metav1.ConditionStatus) {
		c := meta.FindStatusCondition(conds, typ)
		require.NotNil(t, c, typ)
		assert.Equal(t, status, c.Status)
		assert.Equal(t, Reason, c.Reason)
		assert.Equal(t, msg, c.Message)
		assert.Equal(t, int64(2), c.ObservedGeneration)
	}
	switch o := obj.(type) {
	case *v1.GitOpsDeployment:
		gitops(o.Status.Conditions)
	case *v1.GitOpsDeploymentSyncRun:
		gitops(o.Status.Conditions)
	case *v1.GitOpsDeploymentManagedEnvironment:
		std(o.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded, metav1.ConditionFalse)
	case *v1.GitOpsDeploymentRepositoryCredentials:
		std(o.Status.Conditions, v1.RepositoryCredentialConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.Environment:
		std(o.Status.Conditions, appstudio.EnvironmentConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.SnapshotEnvironmentBinding:
		std(o.Status.BindingConditions, appstudio.BindingConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.PromotionRun:
		std(o.Status.Conditions, appstudio.PromotionRunConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.DeploymentTargetClaim:
		std(o.Status.Conditions, appstudio.DeploymentTargetConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.DeploymentTarget:
		std(o.Status.Conditions, appstudio.DeploymentTargetConditionErrorOccurred, metav1.ConditionTrue)
	case *appstudio.PromotionPreview:
		std(o.Status.Conditions, appstudio.PromotionPreviewConditionFailed, metav1.ConditionTrue)
	case *appstudio.SnapshotSubscription:
		std(o.Status.Conditions, appstudio.SubscriptionConditionSourcesResolved, metav1.ConditionFalse)
	default:
		t.Fatalf("a kind without a condition: %T", obj)
	}
}
