package install

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The sidecar may impersonate exactly one identity, Argo CD's application
// controller's ServiceAccount in Argo CD's own namespace (previews on Argo
// CD's own cluster act as it, --preview-local-identity), in the install and
// in an overlay for another namespace; no ClusterRole lets it impersonate.
func TestSidecarImpersonatesOnlyTheApplicationController(t *testing.T) {
	needStack(t)
	for dir, ns := range map[string]string{filepath.Join(repoRoot(t), "manifests", "install"): "argocd", filepath.Join("testdata", "other-namespace"): "argo-prod"} {
		t.Run(ns, func(t *testing.T) {
			r, err := stack.RenderKustomization(context.Background(), dir)
			require.NoError(t, err)
			var found []string
			for _, u := range r.Objects {
				var rules []rbacv1.PolicyRule
				switch u.GetKind() {
				case "Role":
					var role rbacv1.Role
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role))
					rules = role.Rules
				case "ClusterRole":
					var role rbacv1.ClusterRole
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role))
					rules = role.Rules
				default:
					continue
				}
				for _, rule := range rules {
					if !slices.Contains(rule.Verbs, "impersonate") && !slices.Contains(rule.Verbs, "*") {
						continue
					}
					assert.Equal(t, "Role", u.GetKind(), "%s %s may impersonate: %+v", u.GetKind(), u.GetName(), rule)
					assert.Equal(t, ns, u.GetNamespace())
					assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
						ResourceNames: []string{"argocd-application-controller"}, Verbs: []string{"impersonate"}}, rule)
					found = append(found, u.GetNamespace()+"/"+u.GetName())
				}
			}
			assert.Equal(t, []string{ns + "/gitops-service"}, found)
		})
	}
}
