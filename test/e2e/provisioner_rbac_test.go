package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner/namespace"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The namespace provisioner's rights come only from
// components/namespace-provisioner (the stack installs it). Without its
// binding, the installed sidecar's claim of a namespace class says what to
// install (condition and Warning Event); once it is back, the same claim is
// bound.
func TestClaimWithoutNamespaceProvisionerComponent(t *testing.T) {
	ctx := context.Background()
	var installed *unstructured.Unstructured
	for _, u := range side.Rendered.Find("ClusterRoleBinding") {
		if u.GetName() == namespace.ClusterRoleName+".argocd" { // instance-scoped: <name>.<namespace>
			installed = u
		}
	}
	require.NotNil(t, installed, "the stack installs components/namespace-provisioner")
	require.NoError(t, k8s.Delete(ctx, installed.DeepCopy()))
	restore := func() {
		obj := installed.DeepCopy()
		_ = k8s.Patch(ctx, obj, client.Apply, client.FieldOwner("gitops-service-install"), client.ForceOwnership)
	}
	t.Cleanup(restore)

	// Wait until the API server forbids the sidecar what the component gave.
	cfg, err := clientcmd.BuildConfigFromFlags("", side.Kubeconfig())
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	mayCreateNamespaces := func() bool {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "namespaces"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return r.Status.Allowed
	}
	require.Eventually(t, func() bool { return !mayCreateNamespaces() }, deployWait, poll, "the sidecar may still create namespaces")

	ns := tenantNamespace(t)
	cls := dtClass(t, as.ProvisionerNamespace, as.ReclaimPolicyDelete, "")
	claim := &as.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qa"},
		Spec: as.DeploymentTargetClaimSpec{DeploymentTargetClassName: as.DeploymentTargetClassName(cls)}}
	require.NoError(t, k8s.Create(ctx, claim))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), claim) })
	require.Eventually(t, func() bool {
		if k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim) != nil {
			return false
		}
		for _, c := range claim.Status.Conditions {
			if c.Type == as.DeploymentTargetConditionErrorOccurred && c.Reason == namespace.ReasonRightsMissing {
				return strings.Contains(c.Message, namespace.Component)
			}
		}
		return false
	}, deployWait, poll, "the claim does not say what to install: %+v", claim.Status)
	require.Equal(t, as.DeploymentTargetClaimPhasePending, claim.Status.Phase)
	stack.WaitForEvent(t, k8s, claim, "Warning", namespace.ReasonRightsMissing, namespace.Component, deployWait)

	// With the component back (and a change to the claim, not to wait for the
	// retry), the claim is bound.
	restore()
	require.Eventually(t, mayCreateNamespaces, deployWait, poll, "the restored binding does not let the sidecar create namespaces")
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim))
	patch := client.MergeFrom(claim.DeepCopy())
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, "e2e/retry", "1")
	require.NoError(t, k8s.Patch(ctx, claim, patch))
	require.Eventually(t, func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim) == nil && claimBound(claim)
	}, deployWait, poll, "the claim was not bound with the component: %+v", claim.Status)
}
