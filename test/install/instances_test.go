package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

// sharedByDesign are the cluster-scoped objects every instance shares, the
// same content from each: the CRDs, the tenants' aggregated ClusterRoles and
// the admission policies (their bindings carry the instance's parameter).
func sharedByDesign(u *unstructured.Unstructured) bool {
	switch u.GetKind() {
	case "CustomResourceDefinition", "ValidatingAdmissionPolicy":
		return true
	case "ClusterRole", "ClusterRoleBinding":
		// The tenants' aggregated roles, the duty roles a namespace admin binds and
		// the metrics reader the platform binds: one name on the cluster.
		return strings.HasPrefix(u.GetName(), "gitops-service-tenant-") || slices.Contains([]string{"gitops-service-deploymenttargetclass-reader",
			"gitops-service-promoter", "gitops-service-approver", "gitops-service-release-manager", "gitops-service-metrics-reader"}, u.GetName())
	}
	return false
}

// clusterScoped are the kinds manifests/install renders without a namespace
// (kustomize puts one on ValidatingAdmissionPolicyBindings, which have none).
var clusterScoped = map[string]bool{"CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}

// Every cluster-scoped object that is not shared by design has an
// instance-scoped name, <name>.<namespace>, in the install and in an overlay
// for another namespace; the overlay's copy of instance-names.yaml is the
// install's.
func TestClusterScopedNamesAreInstanceScoped(t *testing.T) {
	for dir, ns := range map[string]string{filepath.Join(repoRoot(t), "manifests", "install"): "argocd", filepath.Join("testdata", "other-namespace"): "argo-prod"} {
		scoped := 0
		for _, u := range render(t, dir) {
			if !clusterScoped[u.GetKind()] || sharedByDesign(u) {
				continue
			}
			scoped++
			assert.True(t, strings.HasSuffix(u.GetName(), "."+ns), "%s %s is not scoped to instance %s", u.GetKind(), u.GetName(), ns)
			if ref, ok, _ := unstructured.NestedString(u.Object, "roleRef", "name"); ok {
				assert.Equal(t, u.GetName(), ref, "ClusterRoleBinding %s binds another instance's ClusterRole", u.GetName())
			}
		}
		assert.Equal(t, 6, scoped, "%s: the ClusterRole, its binding and the four admission-policy bindings", ns)
	}
	want, err := os.ReadFile(filepath.Join(repoRoot(t), "manifests", "install", "instance-names.yaml"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("testdata", "other-namespace", "instance-names.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the overlay's instance-names.yaml is not manifests/install's")
}

// Two instances side by side (docs/several-argocd-instances.md): the
// second, installed as its own overlay into another namespace, changes no
// object of the first at all (every one keeps its resourceVersion, shared
// ones included), and each binding names its own ServiceAccount.
func TestSecondInstanceLeavesTheFirstAlone(t *testing.T) {
	bins := needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-instances"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	for _, ns := range []string{"argocd", "argo-prod"} {
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	kubectl := kubectlIn(ctx, t, bins, kube)
	first := render(t, filepath.Join(repoRoot(t), "manifests", "install"))
	kubectl("apply", "--server-side", "-k", "manifests/install")
	versions := func() map[string]string {
		out := map[string]string{}
		for _, u := range first {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			key := client.ObjectKeyFromObject(u)
			if clusterScoped[u.GetKind()] {
				key.Namespace = ""
			}
			require.NoError(t, c.Get(ctx, key, cur), "%s %s", u.GetKind(), u.GetName())
			out[u.GetKind()+"/"+key.String()] = cur.GetResourceVersion()
		}
		return out
	}
	before := versions()
	kubectl("apply", "--server-side", "-k", filepath.Join("test", "install", "testdata", "other-namespace"))
	assert.Equal(t, before, versions(), "installing the second instance changed the first's objects")

	for ns, suffix := range map[string]string{"argocd": ".argocd", "argo-prod": ".argo-prod"} {
		var crb unstructured.Unstructured
		crb.SetAPIVersion("rbac.authorization.k8s.io/v1")
		crb.SetKind("ClusterRoleBinding")
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "gitops-service" + suffix}, &crb))
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		require.Len(t, subjects, 1)
		assert.Equal(t, ns, subjects[0].(map[string]any)["namespace"])
		for _, policy := range []string{"gitops-service-promotion-approvals", "gitops-service-promotion-requesters"} {
			var b unstructured.Unstructured
			b.SetAPIVersion("admissionregistration.k8s.io/v1")
			b.SetKind("ValidatingAdmissionPolicyBinding")
			require.NoError(t, c.Get(ctx, client.ObjectKey{Name: policy + suffix}, &b))
			paramNS, _, _ := unstructured.NestedString(b.Object, "spec", "paramRef", "namespace")
			assert.Equal(t, ns, paramNS, "%s%s's parameter", policy, suffix)
		}
	}
}
