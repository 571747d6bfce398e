//go:build !unit

package deploymenttargetclaim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/test/stack"
)

// Our namespace provisioner on a cluster the platform admin names (a second
// real API server, with the controllers that issue ServiceAccount tokens and
// delete namespaces): claim -> Namespace, ServiceAccount, RoleBinding,
// LimitRange, token -> a kubeconfig for exactly that namespace -> a target,
// bound; reclaim Delete removes the namespace.
func TestNamespaceProvisionerOnAdminsCluster(t *testing.T) {
	ctx := context.Background()
	remote, err := stack.StartKube(ctx, stack.KubeOptions{Name: "provisioned", ControllerManager: true})
	require.NoError(t, err)
	t.Cleanup(remote.Stop)
	remoteClient, err := client.New(remote.Config, client.Options{Scheme: k8s.Scheme()})
	require.NoError(t, err)
	kc, err := remote.KubeconfigFor(remote.AdminToken)
	require.NoError(t, err)
	clusterSecret := "cluster-" + rand.String(5)
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: stack.SuiteArgoNamespace, Name: clusterSecret},
		Data: map[string][]byte{"kubeconfig": kc}}))

	ns := tenant(t)
	cls := class(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, fmt.Sprintf(
		`{"clusterSecret": %q, "clusterRole": "edit", "namespacePattern": "{namespace}-{claim}", "limitRange": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}`,
		clusterSecret))
	c := waitFor(t, claim(t, ns, "qa", cls, ""), isBound, "was bound to a provisioned target")
	dt := &as.DeploymentTarget{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: c.Spec.TargetName}, dt))
	provisioned := ns + "-qa"
	assert.Equal(t, "qa-dt", dt.Name)
	assert.Equal(t, as.DeploymentTargetKubernetesClusterCredentials{
		DefaultNamespace: provisioned, APIURL: remote.URL, ClusterCredentialsSecret: "qa-dt-kubeconfig"}, dt.Spec.KubernetesClusterCredentials)
	assert.Equal(t, string(as.ProvisionerNamespace), dt.Annotations[as.AnnDynamicallyProvisioned])
	assert.True(t, controllerutil.ContainsFinalizer(dt, as.FinalizerProvisioner))

	// Everything is on the admin's cluster, nothing on this one.
	n := &corev1.Namespace{}
	require.NoError(t, remoteClient.Get(ctx, types.NamespacedName{Name: provisioned}, n))
	assert.True(t, apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: provisioned}, &corev1.Namespace{})))
	rb := &rbacv1.RoleBinding{}
	require.NoError(t, remoteClient.Get(ctx, types.NamespacedName{Namespace: provisioned, Name: namespace.ServiceAccountName}, rb))
	assert.Equal(t, "edit", rb.RoleRef.Name)
	require.NoError(t, remoteClient.Get(ctx, types.NamespacedName{Namespace: provisioned, Name: "gitops-service"}, &corev1.LimitRange{}))

	// The tenant's kubeconfig reaches that namespace and nothing else.
	s := &corev1.Secret{}
	require.NoError(t, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "qa-dt-kubeconfig"}, s))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
	require.NoError(t, err)
	deployer, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	require.NoError(t, err)
	require.NoError(t, deployer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: provisioned, Name: "app"}}))
	assert.True(t, apierrors.IsForbidden(deployer.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"))))
	assert.True(t, apierrors.IsForbidden(deployer.List(ctx, &corev1.NamespaceList{})))
	assert.True(t, apierrors.IsForbidden(deployer.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: provisioned, Name: "escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: provisioned, Name: namespace.ServiceAccountName}},
	})), "the credentials grant more than the class's role")

	// A target's annotations are the tenant's to edit: one naming another of
	// the admin's cluster Secrets is not where the namespace is released;
	// the class says where (issue 21 review).
	forged := dt.DeepCopy()
	forged.Annotations[namespace.AnnotationClusterSecret] = "another-admins-cluster"
	require.NoError(t, k8s.Patch(ctx, forged, client.MergeFrom(dt)))

	// Reclaim Delete: claim, target, the kubeconfig and the namespace go.
	require.NoError(t, k8s.Delete(ctx, c))
	waitGone(t, c)
	waitGone(t, dt)
	waitGone(t, s)
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(remoteClient.Get(ctx, types.NamespacedName{Name: provisioned}, n))
	}, wait, tick, "the provisioned namespace was not deleted")
}
