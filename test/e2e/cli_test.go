package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/test/stack"
)

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
)

// pluginBinary builds argocd-gitops (and its kubectl-gitops link) once, as
// `make build` does.
func pluginBinary(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		root, err := stack.RepoRoot()
		if err != nil {
			pluginErr = err
			return
		}
		pluginDir = filepath.Join(gitRoot, "plugin-bin")
		cmd := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "argocd-gitops"), "./extension/cli")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = errors.New(string(out))
			return
		}
		pluginErr = os.Symlink("argocd-gitops", filepath.Join(pluginDir, "kubectl-gitops"))
	})
	require.NoError(t, pluginErr)
	return pluginDir
}

// userKubeconfig writes a kubeconfig for user in namespace ns: the e2e admin's
// token impersonating user, so the API server applies user's RBAC.
func userKubeconfig(t *testing.T, user, ns string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kube.Kubeconfig)
	require.NoError(t, err)
	ctx := cfg.Contexts[cfg.CurrentContext]
	require.NotNil(t, ctx)
	auth := *cfg.AuthInfos[ctx.AuthInfo]
	auth.Impersonate = user
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{user: &auth}
	cfg.Contexts = map[string]*clientcmdapi.Context{user: {Cluster: ctx.Cluster, AuthInfo: user, Namespace: ns}}
	cfg.CurrentContext = user
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// viaArgoCD says whether the stack's argocd runs CLI plugins (Argo CD >= 3.1).
func viaArgoCD() bool {
	var major, minor int
	_, _ = fmt.Sscanf(stack.ArgoCDVersion, "%d.%d", &major, &minor)
	return major > 3 || (major == 3 && minor >= 1)
}

// gitops runs the plugin as a user would: `argocd gitops ...` through the real
// argocd binary when it runs plugins, else argocd-gitops itself.
func gitops(t *testing.T, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	return gitopsWith(t, []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}, args...)
}

// gitopsWith runs the plugin as gitops does, with env added to the test's
// environment (ARGOCD_* of the test's own are dropped).
func gitopsWith(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	dir := pluginBinary(t)
	bins, err := stack.Binaries()
	require.NoError(t, err)
	var cmd *exec.Cmd
	if viaArgoCD() {
		cmd = exec.Command(bins.ArgoCD, append([]string{"gitops"}, args...)...)
	} else {
		cmd = exec.Command(filepath.Join(dir, "argocd-gitops"), args...)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARGOCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	assert.NotContains(t, string(out), "goroutine ", "a stack trace")
	assert.NotContains(t, string(out), "panic", "a panic")
	return string(out), code
}

// TestPluginSyncAndErrors: a tenant with namespace `edit` syncs its manual
// deployment with the plugin (a SyncRun, followed live, exit 0), lists it, and
// gets clear errors (not stack traces) for what it may not or cannot do.
func TestPluginSyncAndErrors(t *testing.T) {
	ns := tenantNamespace(t)
	user := "dev-" + rand.String(4)
	bindClusterRole(t, ns, user, "edit")
	applyTenantRoles(t)
	kc := userKubeconfig(t, user, ns)

	repo, sha := gitRepo(t, map[string]string{"app/cm.yaml": configMap("plugin", "x")})
	gd := deploy(t, ns, "web", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync })

	// Edit rights come through aggregation: allow the controller a moment.
	var out string
	var code int
	require.Eventually(t, func() bool { out, code = gitops(t, kc, "list"); return code == 0 }, deployWait, poll, "list: %s", out)
	assert.Contains(t, out, "web")
	assert.Contains(t, out, "OutOfSync")

	out, code = gitops(t, kc, "sync", "web", "--revision", sha)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "phase Succeeded")
	waitStatus(t, gd, "Synced", syncedHealthyAt(sha))

	out, code = gitops(t, kc, "status", "web", "-o", "json")
	require.Equal(t, 0, code, out)
	var got v1.GitOpsDeployment
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, v1.SyncStatusCodeSynced, got.Status.Sync.Status)

	// A failing sync: exit code 1 with the reason.
	out, code = gitops(t, kc, "sync", "web", "--revision", "no-such-revision", "--timeout", "2m")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "did not succeed")

	out, code = gitops(t, kc, "sync", "nope")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "`list` shows what there is")

	// Another namespace: no rights there (exit code 3: refused).
	out, code = gitops(t, kc, "list", "-n", "default")
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, `you may not do this in namespace "default"`)
	assert.Contains(t, out, "ask your platform admin")
	// A namespace of theirs with nothing in it: kubectl's words, exit 0.
	empty := tenantNamespace(t)
	bindClusterRole(t, empty, user, "edit")
	require.Eventually(t, func() bool { out, code = gitops(t, kc, "list", "-n", empty); return code == 0 }, deployWait, poll, "list: %s", out)
	assert.Equal(t, "No resources found in "+empty+" namespace.\n", out)

	// kubectl's flags (-nfoo, --as of the same user) and cli-runtime's
	// printers: a List of typed objects.
	out, code = gitops(t, kc, "list", "-n"+ns, "--as", user, "--request-timeout", "30s", "-o", "json")
	require.Equal(t, 0, code, out)
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	assert.Equal(t, "List", list.Kind)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "managed-gitops.redhat.com/v1alpha1", list.Items[0].APIVersion)
	assert.Equal(t, "GitOpsDeployment", list.Items[0].Kind)
	assert.Equal(t, "web", list.Items[0].Metadata.Name)
	out, code = gitops(t, kc, "list", "-o", "name")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "gitopsdeployment.managed-gitops.redhat.com/web\n", out)

	// Not finished within --timeout: exit code 4, the run goes on.
	out, code = gitops(t, kc, "sync", "web", "--timeout", "1ms")
	assert.Equal(t, 4, code, out)
	assert.Contains(t, out, "it goes on in the cluster")

	// The kubectl plugin name works the same.
	cmd := exec.Command(filepath.Join(pluginBinary(t), "kubectl-gitops"), "--help")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	assert.Contains(t, string(b), "kubectl gitops sync <deployment>")
}

// TestPluginPromoteAndEnvs: the plugin promotes a Snapshot along the
// Environment graph from dev (stopping before the Manual prod), following each
// step, and `envs` shows the graph with what each Environment runs.
func TestPluginPromoteAndEnvs(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	user := "dev-" + rand.String(4)
	bindClusterRole(t, ns, user, "edit")
	applyTenantRoles(t)
	kc := userKubeconfig(t, user, ns)
	appWithComponents(t, ns, "base")
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
		{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyManual}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))

	var out string
	var code int
	require.Eventually(t, func() bool { out, code = gitops(t, kc, "envs"); return code == 0 }, deployWait, poll, "envs: %s", out)
	assert.Contains(t, out, "dev (AppStudioAutomated)")
	assert.Contains(t, out, "└─ prod (Manual)")

	out, code = gitops(t, kc, "promote", "snap-1", "--auto-from", "dev")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "step 1 dev: success")
	assert.NotContains(t, out, "step 2", "prod is Manual")
	assert.Contains(t, out, ": Success")
	d, err := deployment(ns, "frontend")
	require.NoError(t, err)
	assert.True(t, running(d, "quay.io/example/frontend:v1"), "frontend on dev: %+v", d.Status)

	out, code = gitops(t, kc, "envs", "-o", "json")
	require.Equal(t, 0, code, out)
	var graph []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &graph), out)
	require.Len(t, graph, 2)
	assert.Equal(t, "dev", graph[0]["name"])
	runs, _ := graph[0]["runs"].([]any)
	require.Len(t, runs, 1, "dev runs snap-1: %v", graph[0])
	assert.Equal(t, "snap-1", runs[0].(map[string]any)["snapshot"])
	assert.Empty(t, graph[1]["runs"], "prod runs nothing")

	out, code = gitops(t, kc, "promote", "snap-1")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "--to <environment>")
}

// removeBindingsAfter deletes the tenant's bindings when the test ends and
// waits until Argo CD has removed their Applications, so that later tests
// start from an Argo CD namespace without them (and get the original service's
// names, which some assert).
func removeBindingsAfter(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		require.NoError(t, k8s.DeleteAllOf(ctx, &as.SnapshotEnvironmentBinding{}, client.InNamespace(ns)))
		require.Eventually(t, func() bool {
			var apps argov1alpha1.ApplicationList
			err := k8s.List(ctx, &apps, client.InNamespace(argo.Namespace),
				client.MatchingLabels{ownership.LabelTenantNS: ns, ownership.LabelOwnerKind: ownership.KindBinding})
			return err == nil && len(apps.Items) == 0
		}, deployWait, poll, "the bindings' Applications of %s were not removed", ns)
	})
}
