package install

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The namespace provisioner's rights are not in the main ClusterRole: as
// installed without the namespace-provisioner component, the sidecar's
// ServiceAccount is forbidden to create the namespace and the claim is
// refused with what to install (the binder makes that refusal the claim's
// condition and a Warning Event); with the component's ClusterRole applied,
// the same call creates the namespace, its ServiceAccount and its RoleBinding
// to edit (bind).
func TestNamespaceProvisionerNeedsItsComponent(t *testing.T) {
	needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-provisioner"})
	require.NoError(t, err)
	defer kube.Stop()
	admin, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}))

	base, err := stack.RenderInstall(ctx, t.TempDir())
	require.NoError(t, err)
	for _, u := range base.Find("ClusterRole") {
		assert.NotContains(t, u.GetName(), namespace.ClusterRoleName, "the main install holds the provisioner's ClusterRole")
	}
	require.NoError(t, base.ApplyRBAC(ctx, kube))

	cs, err := kube.Clientset()
	require.NoError(t, err)
	tr, err := cs.CoreV1().ServiceAccounts("argocd").CreateToken(ctx, "gitops-service",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	require.NoError(t, err)
	sidecar, err := client.New(kube.TokenConfig(tr.Status.Token), client.Options{})
	require.NoError(t, err)
	p := &namespace.Provisioner{Client: sidecar, Local: kube.TokenConfig(tr.Status.Token), APIReader: sidecar, SidecarNamespace: "argocd"}
	claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "dev", UID: "0b1c2d3e"}}
	class := &as.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "namespaces"}, Spec: as.DeploymentTargetClassSpec{Provisioner: as.ProvisionerNamespace}}
	provisioned := namespace.DefaultNamespaceName(claim.Namespace, claim.Name)

	_, err = p.Provision(ctx, claim, class)
	var refusal *kernel.Refusal
	require.True(t, errors.As(err, &refusal), "not a refusal: %v", err)
	assert.Equal(t, namespace.ReasonRightsMissing, refusal.Reason)
	assert.Contains(t, refusal.Message, namespace.Component)
	assert.Contains(t, refusal.Message, "namespace "+provisioned)

	withComponent, err := stack.RenderInstall(ctx, t.TempDir(), stack.NamespaceProvisionerComponent)
	require.NoError(t, err)
	require.Len(t, withComponent.Find("ClusterRoleBinding"), len(base.Find("ClusterRoleBinding"))+1)
	require.NoError(t, withComponent.ApplyRBAC(ctx, kube))
	require.Eventually(t, func() bool {
		dt, err := p.Provision(ctx, claim, class)
		// No token controller here: it waits for the token (nil, nil).
		return err == nil && dt == nil
	}, 30*time.Second, stack.Tick, "the component's ClusterRole does not let the provisioner provision")
	rb := &rbacv1.RoleBinding{}
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: provisioned, Name: namespace.ServiceAccountName}, rb))
	assert.Equal(t, "edit", rb.RoleRef.Name)
	require.NoError(t, admin.Get(ctx, types.NamespacedName{Namespace: provisioned, Name: namespace.ServiceAccountName}, &corev1.ServiceAccount{}))
}
