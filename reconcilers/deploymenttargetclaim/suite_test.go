//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/extension/sidecar"
	"github.com/gitops-service/gitops-service/test/stack"
)

var k8s client.Client

// releaseTimeout is short, so a stuck release shows as Failed quickly.
const releaseTimeout = 3 * time.Second

const (
	wait = 30 * time.Second
	tick = stack.Tick
)

func TestMain(m *testing.M) {
	os.Exit(stack.RunSuite(m, "deploymenttargetclaim", func(s *stack.Suite) error {
		k8s = s.Client
		return nil
	}, func(o *sidecar.Options) { o.ReleaseTimeout = releaseTimeout }))
}

func tenant(t *testing.T) string { return stack.Tenant(t, k8s).Name }

// class creates a DeploymentTargetClass with a unique name.
func class(t *testing.T, p as.Provisioner, policy as.ReclaimPolicy, params string) string {
	t.Helper()
	c := &as.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "class-" + rand.String(6)},
		Spec:       as.DeploymentTargetClassSpec{Provisioner: p, ReclaimPolicy: policy},
	}
	if params != "" {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(params)}
	}
	require.NoError(t, k8s.Create(context.Background(), c))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
	return c.Name
}

// target creates a static DeploymentTarget of the class, changed by mutate.
func target(t *testing.T, ns, name, cls string, mutate func(*as.DeploymentTarget)) *as.DeploymentTarget {
	t.Helper()
	dt := &as.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: as.DeploymentTargetSpec{
			DeploymentTargetClassName: as.DeploymentTargetClassName(cls),
			KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "target-" + name, APIURL: "https://api.cluster.example.test:6443", ClusterCredentialsSecret: name + "-secret",
			},
		},
	}
	if mutate != nil {
		mutate(dt)
	}
	require.NoError(t, k8s.Create(context.Background(), dt))
	return dt
}

func claim(t *testing.T, ns, name, cls, targetName string) *as.DeploymentTargetClaim {
	t.Helper()
	c := &as.DeploymentTargetClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls), TargetName: targetName},
	}
	require.NoError(t, k8s.Create(context.Background(), c))
	return c
}

// waitFor re-reads obj until cond holds.
func waitFor[T client.Object](t *testing.T, obj T, cond func(T) bool, what string) T {
	t.Helper()
	return stack.WaitFor(t, k8s, obj, wait, what, cond)
}

func waitGone(t *testing.T, obj client.Object) { stack.WaitGone(t, k8s, obj, wait) }

// claimCondition is the claim's ErrorOccurred condition, or nil.
func claimCondition(c *as.DeploymentTargetClaim) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, as.DeploymentTargetConditionErrorOccurred)
}

func hasReason(c *as.DeploymentTargetClaim, phase as.DeploymentTargetClaimPhase, status metav1.ConditionStatus, reason string) bool {
	cond := claimCondition(c)
	return c.Status.Phase == phase && cond != nil && cond.Status == status && cond.Reason == reason
}

// isReady says whether c's Ready condition has status and reason at c's generation.
func isReady(c *as.DeploymentTargetClaim, status metav1.ConditionStatus, reason string) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, "Ready")
	return cond != nil && cond.Status == status && cond.Reason == reason && cond.ObservedGeneration == c.Generation && c.Status.ObservedGeneration == c.Generation
}

// parallel runs f(i) for i in [0, n) on n goroutines and waits for them.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); f(i) }()
	}
	wg.Wait()
}
