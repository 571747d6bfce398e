package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/test/stack"
)

// kubectl runs the real kubectl against the e2e cluster as its admin (add
// --as to impersonate) and returns its combined output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bins, err := stack.Binaries()
	require.NoError(t, err)
	cmd := exec.Command(bins.Kubectl, append([]string{"--kubeconfig", kube.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var tenantRolesOnce sync.Once

// applyTenantRoles applies manifests/rbac/tenant_roles.yaml (once).
func applyTenantRoles(t *testing.T) {
	t.Helper()
	tenantRolesOnce.Do(func() {
		root, err := stack.RepoRoot()
		require.NoError(t, err)
		out, err := kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "rbac", "tenant_roles.yaml"))
		require.NoError(t, err, out)
	})
}

// ourCRDs reads every CRD of manifests/crd: resource.group, and whether it is
// namespaced.
func ourCRDs(t *testing.T) map[string]bool {
	t.Helper()
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "manifests", "crd", "*_*.yaml"))
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(data, &crd), f)
		out[crd.Spec.Names.Plural+"."+crd.Spec.Group] = crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	}
	require.NotEmpty(t, out)
	return out
}

// TestTenantKubectlRBAC: with manifests/rbac/tenant_roles.yaml applied, Kubernetes
// aggregates our rules into admin/edit/view: a user with `edit` in a tenant
// namespace may create every kind of ours there but PromotionHistory (the
// sidecar's audit trail) and never write status, a
// `view` user may read them and create none, and every authenticated user may
// read DeploymentTargetClasses. Checked by the real API server's authorizer
// (kubectl auth can-i, kubectl --as) and by real creates.
func TestTenantKubectlRBAC(t *testing.T) {
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	applyTenantRoles(t)

	ns := tenantNamespace(t)
	editor, viewer, admin := "editor-"+rand.String(4), "viewer-"+rand.String(4), "admin-"+rand.String(4)
	bindClusterRole(t, ns, editor, "edit")
	bindClusterRole(t, ns, admin, "admin")
	bindClusterRole(t, ns, viewer, "view")
	can := func(user, verb, resource, namespace string, extra ...string) bool {
		t.Helper()
		args := append([]string{"auth", "can-i", verb, resource, "--as", user}, extra...)
		if namespace != "" {
			args = append(args, "-n", namespace)
		}
		out, _ := kubectl(t, args...)
		// The answer is the last line (kubectl warns first about cluster-scoped resources).
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1] == "yes"
	}

	for resource, namespaced := range ourCRDs(t) {
		if !namespaced {
			// Cluster-scoped (DeploymentTargetClasses): the platform's; anyone reads.
			assert.True(t, can("someone-"+rand.String(4), "list", resource, ""), "authenticated users list %s", resource)
			assert.False(t, can(editor, "create", resource, ""), "a tenant editor creates %s", resource)
			continue
		}
		if resource == "promotionhistories.appstudio.redhat.com" {
			// The audit trail: made by the sidecar, outliving PromotionRuns; edit
			// reads it; releasing a hold (spec.releasedAt) lifts a gate: admin's
			// (issue 33). Nobody creates or deletes it.
			require.Eventually(t, func() bool { return can(admin, "patch", resource, ns) }, deployWait, poll,
				"admin in %s does not allow patching %s", ns, resource)
			for _, verb := range []string{"get", "list", "watch"} {
				assert.True(t, can(editor, verb, resource, ns), "edit: %s %s", verb, resource)
			}
			for _, verb := range []string{"update", "patch", "create", "delete"} {
				assert.False(t, can(editor, verb, resource, ns), "edit: %s %s (the audit trail, a gate)", verb, resource)
			}
			for _, verb := range []string{"create", "delete"} {
				assert.False(t, can(admin, verb, resource, ns), "admin: %s %s (the audit trail)", verb, resource)
			}
		} else {
			// Aggregation is done by kube-controller-manager: allow it a moment.
			require.Eventually(t, func() bool { return can(editor, "create", resource, ns) }, deployWait, poll,
				"edit in %s does not allow creating %s", ns, resource)
			for _, verb := range []string{"get", "list", "watch", "update", "patch", "delete"} {
				assert.True(t, can(editor, verb, resource, ns), "edit: %s %s", verb, resource)
			}
		}
		require.True(t, can("cluster-admin", "update", resource, ns, "--subresource=status", "--as-group", "system:masters"),
			"the status check cannot say yes")
		assert.False(t, can(editor, "update", resource, ns, "--subresource=status"), "edit writes %s status", resource)
		assert.False(t, can(editor, "patch", resource, ns, "--subresource=status"), "edit patches %s status", resource)
		assert.False(t, can(editor, "create", resource, "default"), "edit in %s reaches namespace default: %s", ns, resource)
		for _, verb := range []string{"get", "list", "watch"} {
			assert.True(t, can(viewer, verb, resource, ns), "view: %s %s", verb, resource)
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			assert.False(t, can(viewer, verb, resource, ns), "view: %s %s", verb, resource)
		}
	}

	// Real creates of the samples (every App Studio kind and a GitOpsDeployment)
	// with the API server's admission and validation (server-side dry run: the
	// sidecar need not deploy them).
	samples := []string{
		filepath.Join(root, "manifests", "samples", "gitopsdeployment.yaml"),
		filepath.Join(root, "manifests", "samples", "appstudio", "appstudio.yaml"),
		filepath.Join(root, "manifests", "samples", "appstudio", "promotionrun.yaml"),
	}
	for _, f := range samples {
		out, err := kubectl(t, "create", "--dry-run=server", "-n", ns, "--as", editor, "-f", f)
		assert.NoError(t, err, "edit creating %s: %s", f, out)
		out, err = kubectl(t, "create", "--dry-run=server", "-n", ns, "--as", viewer, "-f", f)
		assert.Error(t, err, "view creating %s", f)
		assert.Contains(t, out, "forbidden", "view creating %s", f)
	}
	out, err := kubectl(t, "get", "gitopsdeployments,snapshotenvironmentbindings,promotionruns", "-n", ns, "--as", viewer)
	assert.NoError(t, err, "view reading: %s", out)
}
