//go:build !unit

package deploymenttarget_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/devsandbox"
	"github.com/gitops-service/gitops-service/test/stack"
)

var k8s client.Client

const (
	wait = 30 * time.Second
	tick = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "deploymenttarget", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}))
}

func setup(t *testing.T, policy as.ReclaimPolicy) (ns, cls string) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + rand.String(6)}}
	require.NoError(t, k8s.Create(context.Background(), n))
	c := &as.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "class-" + rand.String(6)},
		Spec:       as.DeploymentTargetClassSpec{Provisioner: as.ProvisionerDevSandbox, ReclaimPolicy: policy},
	}
	require.NoError(t, k8s.Create(context.Background(), c))
	return n.Name, c.Name
}

func newTarget(ns, name, cls string) *as.DeploymentTarget {
	return &as.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.DeploymentTargetSpec{
			DeploymentTargetClassName: as.DeploymentTargetClassName(cls),
			KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "ns", APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "s",
			},
		},
	}
}

func waitPhase(t *testing.T, dt *as.DeploymentTarget, phase as.DeploymentTargetPhase) *as.DeploymentTarget {
	t.Helper()
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt) == nil && dt.Status.Phase == phase
	}, wait, tick, "%s never %s; last %+v", dt.Name, phase, dt.Status)
	return dt
}

// markBound plays a binder that bound dt to a claim which is then gone
// without the binder's finalizer (e.g. removed by hand).
func markBound(t *testing.T, dt *as.DeploymentTarget, claim string) {
	t.Helper()
	dt.Spec.ClaimRef = claim
	require.NoError(t, k8s.Create(context.Background(), dt))
	require.Eventually(t, func() bool {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt); err != nil {
			return false
		}
		dt.Status.Phase = as.DeploymentTargetPhaseBound
		return k8s.Status().Update(context.Background(), dt) == nil
	}, wait, tick)
}

func TestFreeTargetIsAvailable(t *testing.T) {
	ns, cls := setup(t, as.ReclaimPolicyRetain)
	dt := newTarget(ns, "free", cls)
	require.NoError(t, k8s.Create(context.Background(), dt))
	dt = waitPhase(t, dt, as.DeploymentTargetPhaseAvailable)
	cond := meta.FindStatusCondition(dt.Status.Conditions, as.DeploymentTargetConditionErrorOccurred)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	waitReady(t, dt, metav1.ConditionTrue, "Available")
}

// waitReady waits for dt's Ready condition with status and reason at its generation.
func waitReady(t *testing.T, dt *as.DeploymentTarget, status metav1.ConditionStatus, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt) != nil {
			return false
		}
		c := meta.FindStatusCondition(dt.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.Reason == reason && c.ObservedGeneration == dt.Generation && dt.Status.ObservedGeneration == dt.Generation
	}, wait, tick, "%s never Ready %s/%s; last %+v", dt.Name, status, reason, dt.Status)
}

func TestClaimGoneRetainReleases(t *testing.T) {
	ns, cls := setup(t, as.ReclaimPolicyRetain)
	dt := newTarget(ns, "orphan", cls)
	markBound(t, dt, "ghost")
	dt = waitPhase(t, dt, as.DeploymentTargetPhaseReleased)
	assert.Empty(t, dt.Spec.ClaimRef)
	stack.WaitForEvent(t, k8s, dt, corev1.EventTypeNormal, "Released", "ghost", wait)
	waitReady(t, dt, metav1.ConditionFalse, "Released")
}

// A target pre-bound to a claim that does not exist yet (never Bound) waits for it.
func TestPreBoundTargetWaitsForItsClaim(t *testing.T) {
	ns, cls := setup(t, as.ReclaimPolicyRetain)
	dt := newTarget(ns, "reserved", cls)
	dt.Spec.ClaimRef = "future"
	require.NoError(t, k8s.Create(context.Background(), dt))
	dt = waitPhase(t, dt, as.DeploymentTargetPhaseAvailable)
	time.Sleep(time.Second)
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt))
	assert.Equal(t, "future", dt.Spec.ClaimRef)
	assert.Equal(t, as.DeploymentTargetPhaseAvailable, dt.Status.Phase)
}

// A provisioned target whose claim is gone, policy Delete: deleted, its
// SpaceRequest first.
func TestClaimGoneDeleteDeletesProvisionedTarget(t *testing.T) {
	ns, cls := setup(t, as.ReclaimPolicyDelete)
	sr := &unstructured.Unstructured{}
	sr.SetGroupVersionKind(devsandbox.SpaceRequestGVK)
	sr.SetNamespace(ns)
	sr.SetName("ghost-abcde")
	sr.SetLabels(map[string]string{as.LabelDTC: "ghost", as.LabelDT: "ghost-dt"})
	require.NoError(t, k8s.Create(context.Background(), sr))
	dt := newTarget(ns, "ghost-dt", cls)
	dt.Annotations = map[string]string{as.AnnDynamicallyProvisioned: string(as.ProvisionerDevSandbox)}
	dt.Finalizers = []string{as.FinalizerProvisioner}
	markBound(t, dt, "ghost")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt))
	}, wait, tick, "the target was not deleted")
	assert.True(t, apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(sr), sr)), "its SpaceRequest was not deleted")
}

// The binder reserved the target (claimRef, bound-by-controller) for a
// claim that went before its binding was written (the claim's finalizer
// comes with the binding): the target is free again, not Released.
func TestReservedForAGoneClaimIsFreed(t *testing.T) {
	ns, cls := setup(t, as.ReclaimPolicyRetain)
	dt := newTarget(ns, "reserved-by-binder", cls)
	dt.Spec.ClaimRef = "gone-before-binding"
	dt.Annotations = map[string]string{as.AnnBoundByController: as.AnnBinderValueTrue}
	require.NoError(t, k8s.Create(context.Background(), dt))
	require.Eventually(t, func() bool {
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(dt), dt) == nil && dt.Spec.ClaimRef == ""
	}, wait, tick, "the reservation was never given back")
	assert.Empty(t, dt.Annotations[as.AnnBoundByController])
	waitPhase(t, dt, as.DeploymentTargetPhaseAvailable)
	waitReady(t, dt, metav1.ConditionTrue, "Available")
}
