//go:build !unit

package environment_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	mg "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/environment"
)

func withClaimNamed(name string) func(*as.Environment) {
	return func(env *as.Environment) { env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = name }
}

// An Environment through a claim: nothing while the claim is not Bound (a
// condition says it waits), then a ManagedEnvironment from the bound target
// (its untyped Secret copied into our typed one, limited to its
// defaultNamespace); Lost keeps what was written.
func TestEnvironmentThroughClaim(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	kc, token := fakeKubeconfig(apiURL)
	// A provisioner's Secret may be untyped.
	credentialsSecret(t, ns, "dt-creds", corev1.SecretTypeOpaque, map[string][]byte{"kubeconfig": kc})
	cls := &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "class-" + rand.String(6)},
		Spec: as.DeploymentTargetClassSpec{Provisioner: "example.test/external", ReclaimPolicy: as.ReclaimPolicyRetain}}
	require.NoError(t, k8s.Create(ctx, cls))
	claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-dtc"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls.Name)}}
	require.NoError(t, k8s.Create(ctx, claim))
	env := newEnv(t, ns, "prod", nil, withClaimNamed("prod-dtc"))
	waitCondition(t, env, metav1.ConditionFalse, as.EnvironmentReasonDeploymentTargetClaimNotBound, "waiting for DeploymentTargetClaim prod-dtc to be Bound")
	assertNothingWritten(t, env)

	// The (external) provisioner delivers: the binder binds, the Environment follows.
	dt := &as.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-dt"},
		Spec: as.DeploymentTargetSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls.Name), ClaimRef: "prod-dtc",
			KubernetesClusterCredentials: as.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "team-prod", APIURL: apiURL, ClusterCredentialsSecret: "dt-creds", AllowInsecureSkipTLSVerify: true}}}
	require.NoError(t, k8s.Create(ctx, dt))
	me := waitManagedEnvironment(t, env, exists)
	assert.Equal(t, apiURL, me.Spec.APIURL)
	assert.Equal(t, []string{"team-prod"}, me.Spec.Namespaces)
	assert.True(t, me.Spec.AllowInsecureSkipTLSVerify)
	s := waitSecret(t, env, exists)
	assert.Equal(t, corev1.SecretType(mg.ManagedEnvironmentSecretType), s.Type)
	assert.Equal(t, kc, s.Data["kubeconfig"])
	waitCondition(t, env, metav1.ConditionFalse, environment.ReasonResolved, "")

	// The target is deleted: the claim is Lost, the Environment says so, and
	// nothing written for it (so nothing deployed through it) is removed.
	require.NoError(t, k8s.Delete(ctx, dt))
	waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonDeploymentTargetClaimLost, "lost its DeploymentTarget prod-dt")
	waitEvent(t, env, corev1.EventTypeWarning, as.EnvironmentReasonDeploymentTargetClaimLost, "prod-dt")
	require.NoError(t, k8s.Get(ctx, meKey(env), me))
	require.NoError(t, k8s.Get(ctx, secretKey(env), s))
	t.Cleanup(func() { assertNoLeak(t, ns, token) })
}

// A tenant cannot deploy through another tenant's claim: names resolve in
// the Environment's own namespace only.
func TestEnvironmentCannotUseAnotherTenantsClaim(t *testing.T) {
	ctx := context.Background()
	a, b := tenant(t), tenant(t)
	require.NoError(t, k8s.Create(ctx, &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "theirs"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: "any"}}))
	env := newEnv(t, b, "thief", nil, withClaimNamed("theirs"))
	waitCondition(t, env, metav1.ConditionTrue, as.EnvironmentReasonDeploymentTargetClaimNotFound, "not found in namespace "+b)
	assertNothingWritten(t, env)
}
