package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func dtClass(t *testing.T, p as.Provisioner, policy as.ReclaimPolicy, params string) string {
	t.Helper()
	c := &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "class-" + rand.String(6)},
		Spec: as.DeploymentTargetClassSpec{Provisioner: p, ReclaimPolicy: policy}}
	if params != "" {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(params)}
	}
	require.NoError(t, k8s.Create(context.Background(), c))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
	return c.Name
}

func claimBound(c *as.DeploymentTargetClaim) bool {
	return c.Status.Phase == as.DeploymentTargetClaimPhaseBound && c.Annotations[as.AnnBindCompleted] == as.AnnBinderValueTrue
}

// Dynamic provisioning with our namespace provisioner, end to end: claim ->
// DeploymentTarget -> Environment -> binding -> the component's Deployment
// running the Snapshot's image in the provisioned namespace, whose credentials
// reach nothing else; deleting the claim deletes the namespace.
func TestProvisionedNamespaceEndToEnd(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "overlays/dev")
	cls := dtClass(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete,
		`{"namespacePattern": "{namespace}-{claim}", "clusterRole": "edit", "resourceQuota": {"hard": {"pods": "10"}}}`)
	claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls)}}
	require.NoError(t, k8s.Create(ctx, claim))
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "staging"},
		Spec: as.EnvironmentSpec{DisplayName: "Staging", DeploymentStrategy: as.DeploymentStrategyManual,
			Configuration: as.EnvironmentConfiguration{Target: as.EnvironmentTarget{
				DeploymentTargetClaim: as.DeploymentTargetClaimConfig{ClaimName: "staging"}}}}}))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	seb := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-staging"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "staging", Snapshot: "snap-1"}}
	require.NoError(t, k8s.Create(ctx, seb))

	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim) == nil && claimBound(claim)
	}, deployWait, poll, "the claim was not bound: %+v", claim.Status)
	provisioned := ns + "-staging"
	dt := &as.DeploymentTarget{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: claim.Spec.TargetName}, dt))
	assert.Equal(t, provisioned, dt.Spec.KubernetesClusterCredentials.DefaultNamespace)
	assert.Equal(t, string(as.ProvisionerNamespace), dt.Annotations[as.AnnDynamicallyProvisioned])
	assert.Equal(t, "staging", dt.Spec.ClaimRef)
	quota := &corev1.ResourceQuota{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: provisioned, Name: "gitops-service"}, quota))

	me := &v1.GitOpsDeploymentManagedEnvironment{}
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: ownership.ManagedEnvironmentName("staging")}, me) == nil
	}, deployWait, poll, "no ManagedEnvironment for the Environment")
	assert.Equal(t, []string{provisioned}, me.Spec.Namespaces)
	assert.Equal(t, dt.Spec.KubernetesClusterCredentials.APIURL, me.Spec.APIURL)

	// The Snapshot's images run in the provisioned namespace.
	require.Eventually(t, func() bool {
		fe, err1 := deployment(provisioned, "frontend")
		be, err2 := deployment(provisioned, "backend")
		return err1 == nil && err2 == nil &&
			fe.Spec.Template.Spec.Containers[0].Image == "quay.io/example/frontend:v1" &&
			be.Spec.Template.Spec.Containers[0].Image == "quay.io/example/backend:v1"
	}, deployWait, poll, "the Snapshot's images were not deployed to the provisioned namespace")
	_, err := deployment(ns, "frontend")
	assert.True(t, apierrors.IsNotFound(err), "nothing is deployed to the tenant's own namespace")
	// Every kind on the way is done, as kubectl and kstatus see it.
	kubectlWaitReady(t, ns, resClaim, claim.Name)
	kubectlWaitReady(t, ns, resTarget, dt.Name)
	kubectlWaitReady(t, ns, resManagedEnv, me.Name)
	kubectlWaitReady(t, ns, resEnvironment, "staging")
	kubectlWaitReady(t, ns, resBinding, seb.Name)

	// The target's credentials reach its namespace and nothing else.
	secret := &corev1.Secret{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret}, secret))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	require.NoError(t, err)
	deployer, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	require.NoError(t, err)
	require.NoError(t, deployer.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(provisioned)))
	assert.True(t, apierrors.IsForbidden(deployer.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns))), "the credentials reach the tenant's namespace")
	assert.True(t, apierrors.IsForbidden(deployer.List(ctx, &corev1.NamespaceList{})), "the credentials list namespaces")
	assert.True(t, apierrors.IsForbidden(deployer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "escape-" + rand.String(5)}})))

	// Reclaim Delete: the claim goes, then its target and the namespace.
	require.NoError(t, k8s.Delete(ctx, seb))
	waitDeleted(t, seb)
	require.NoError(t, k8s.Delete(ctx, claim))
	waitDeleted(t, claim)
	waitDeleted(t, dt)
	waitDeleted(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: provisioned}})
}

// An Environment through a claim that is not Bound waits with a condition
// saying so; a missing claim is an error.
func TestEnvironmentWaitsForItsClaim(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	cls := dtClass(t, "example.test/external", as.ReclaimPolicyRetain, "")
	env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
		Spec: as.EnvironmentSpec{Configuration: as.EnvironmentConfiguration{Target: as.EnvironmentTarget{
			DeploymentTargetClaim: as.DeploymentTargetClaimConfig{ClaimName: "later"}}}}}
	require.NoError(t, k8s.Create(ctx, env))
	envReason := func(status metav1.ConditionStatus, reason string) func() bool {
		return func() bool {
			if k8s.Get(ctx, client.ObjectKeyFromObject(env), env) != nil {
				return false
			}
			c := meta.FindStatusCondition(env.Status.Conditions, as.EnvironmentConditionErrorOccurred)
			return c != nil && c.Status == status && c.Reason == reason
		}
	}
	require.Eventually(t, envReason(metav1.ConditionTrue, as.EnvironmentReasonDeploymentTargetClaimNotFound), deployWait, poll)
	require.NoError(t, k8s.Create(ctx, &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls)}}))
	require.Eventually(t, envReason(metav1.ConditionFalse, as.EnvironmentReasonDeploymentTargetClaimNotBound), deployWait, poll)
}

// 100 claims race for 50 targets while the sidecar restarts: exactly 50 are
// bound, no target twice.
func TestConcurrentClaimsAcrossARestart(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	cls := dtClass(t, "example.test/external", as.ReclaimPolicyRetain, "")
	each := func(n int, f func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); f(i) }()
		}
		wg.Wait()
	}
	each(50, func(i int) {
		assert.NoError(t, k8s.Create(ctx, &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dt-%02d", i)},
			Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls),
				KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
					DefaultNamespace: "x", APIURL: "https://api.example.test:6443", ClusterCredentialsSecret: "s"}}}))
	})
	newClaim := func(i int) {
		assert.NoError(t, k8s.Create(ctx, &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("claim-%03d", i)},
			Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls)}}))
	}
	each(50, newClaim)
	side.Stop()
	each(50, func(i int) { newClaim(50 + i) })
	require.NoError(t, side.Start(ctx))

	var claims as.DeploymentTargetClaimList
	require.Eventually(t, func() bool {
		require.NoError(t, k8s.List(ctx, &claims, client.InNamespace(ns)))
		bound, pending := 0, 0
		for i := range claims.Items {
			switch {
			case claimBound(&claims.Items[i]):
				bound++
			case claims.Items[i].Status.Phase == as.DeploymentTargetClaimPhasePending:
				pending++
			}
		}
		return bound == 50 && pending == 50
	}, deployWait, poll, "never 50 bound and 50 pending")
	var dts as.DeploymentTargetList
	require.NoError(t, k8s.List(ctx, &dts, client.InNamespace(ns)))
	claimOf := map[string]string{}
	for _, dt := range dts.Items {
		require.NotEmpty(t, dt.Spec.ClaimRef, "target %s is free while claims wait", dt.Name)
		claimOf[dt.Name] = dt.Spec.ClaimRef
	}
	named := map[string]bool{}
	for _, c := range claims.Items {
		if c.Spec.TargetName == "" {
			continue
		}
		require.False(t, named[c.Spec.TargetName], "target %s named by two claims", c.Spec.TargetName)
		named[c.Spec.TargetName] = true
		assert.Equal(t, c.Name, claimOf[c.Spec.TargetName])
	}
	assert.Len(t, named, 50)
}
