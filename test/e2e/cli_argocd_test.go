package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// apiToken makes an Argo CD API token of a local account (as
// `argocd account generate-token --account <user>` by the admin), after
// giving the account the apiKey capability.
func apiToken(t *testing.T, user string) string {
	t.Helper()
	ctx := context.Background()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"accounts.`+user+`":"login, apiKey"}}`))
	require.NoError(t, k8s.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: argo.Namespace, Name: "argocd-cm"}}, patch))
	admin, err := argo.AdminSession(ctx)
	require.NoError(t, err)
	var token, last string
	ok := assert.Eventually(t, func() bool {
		body, _ := json.Marshal(map[string]string{"name": user})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+argo.ServerAddr+"/api/v1/account/"+user+"/token", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err.Error()
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Token string `json:"token"`
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
			return false
		}
		token = out.Token
		return token != ""
	}, 2*deployWait, time.Second)
	require.True(t, ok, "no API token for %s: %s", user, last)
	return token
}

// argoHome is a home directory holding cli's argocd config file where argocd
// keeps it (~/.config/argocd/config), as after `argocd login` on a laptop.
func argoHome(t *testing.T, cli *stack.ArgoCLI) string {
	t.Helper()
	home := t.TempDir()
	cfg, err := os.ReadFile(cli.Config)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "argocd"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "argocd", "config"), cfg, 0o600))
	return home
}

// TestPluginWithArgoCDLogin: a tenant's user with an Argo CD login and no
// kubeconfig lists, gets, syncs and promotes through the real argocd binary
// (`argocd gitops`), which goes through argocd-server's proxy extension with
// the user's token: with `argocd login` (config file and current context) and
// with an API token (--server, $ARGOCD_AUTH_TOKEN). Argo CD's authorization
// decides: another tenant's deployment is invisible, the admin (not named in
// the tenant mapping) is refused actions (exit code 3).
func TestPluginWithArgoCDLogin(t *testing.T) {
	if !viaArgoCD() {
		t.Skip("argocd runs CLI plugins from 3.1 on")
	}
	ctx := context.Background()
	ns := tenantNamespace(t)
	appWithComponents(t, ns, "base")
	kc, err := remote(t).KubeconfigFor(remoteAdminTokenFor(t))
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, credentialsSecret(ns, "staging-creds", v1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(kc)})))
	for _, e := range []*as.Environment{
		{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: as.EnvironmentSpec{DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated}},
		{ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: as.EnvironmentSpec{ParentEnvironment: "dev", DeploymentStrategy: as.DeploymentStrategyAppStudioAutomated,
			UnstableConfigurationFields: &as.UnstableEnvironmentConfiguration{KubernetesClusterCredentials: as.KubernetesClusterCredentials{
				APIURL: remoteKube.URL, TargetNamespace: remoteNamespace(t, "cli-staging"), ClusterCredentialsSecret: "staging-creds"}}}},
	} {
		e.Namespace = ns
		require.NoError(t, k8s.Create(ctx, e))
	}
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))
	dev := &as.SnapshotEnvironmentBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "appa-dev"},
		Spec: as.SnapshotEnvironmentBindingSpec{Application: "appa", Environment: "dev", Snapshot: "snap-1"}}
	require.NoError(t, k8s.Create(ctx, dev))

	repo, sha := gitRepo(t, map[string]string{"app/cm.yaml": configMap("cli-argocd", "x")})
	gd := deploy(t, ns, "web", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync })
	autoRepo, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("cli-argocd-auto", "x")})
	auto := deploy(t, ns, "auto", autoRepo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, auto, "Synced", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeSynced })
	// Another tenant's deployment: never shown to this tenant's user.
	other := tenantNamespace(t)
	theirs := deploy(t, other, "theirs", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, theirs, "Synced", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeSynced })

	user, password := "cli-"+rand.String(5), "cli-password-"+rand.String(8)
	require.NoError(t, argo.CreateAccount(ctx, user, password))
	mapTenant(t, ns, user)
	var devApps argov1alpha1.ApplicationList
	require.Eventually(t, func() bool {
		return k8s.List(ctx, &devApps, client.InNamespace(argo.Namespace), client.MatchingLabels{"managed-gitops.redhat.com/owner-uid": string(dev.UID)}) == nil && len(devApps.Items) > 0
	}, deployWait, poll, "no Application for the dev binding")
	waitAccess(t, user, password, application(t, gd).Name, devApps.Items[0].Name)
	cli, err := argo.Login(ctx, user, password)
	require.NoError(t, err)

	// 1. `argocd login` only: no kubeconfig, argocd's config file in ~.
	login := []string{"HOME=" + argoHome(t, cli), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	out, code := gitopsWith(t, login, "list")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "web")
	assert.Contains(t, out, "OutOfSync")
	assert.Contains(t, out, "appa-dev")
	assert.NotContains(t, out, "theirs", "another tenant's deployment")

	out, code = gitopsWith(t, login, "status", "web", "-o", "json")
	require.Equal(t, 0, code, out)
	var got v1.GitOpsDeployment
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "GitOpsDeployment", got.Kind)
	assert.Equal(t, "managed-gitops.redhat.com/v1alpha1", got.APIVersion)
	assert.Equal(t, ns, got.Namespace)
	assert.Equal(t, gd.UID, got.UID)
	assert.Equal(t, v1.SyncStatusCodeOutOfSync, got.Status.Sync.Status)

	out, code = gitopsWith(t, login, "sync", "web", "--revision", sha)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "phase Succeeded")
	waitStatus(t, gd, "Synced", syncedHealthyAt(sha))
	var runs v1.GitOpsDeploymentSyncRunList
	require.NoError(t, k8s.List(ctx, &runs, client.InNamespace(ns)))
	require.Len(t, runs.Items, 1)
	assert.Equal(t, sha, runs.Items[0].Spec.RevisionID, "the revision went through the extension")

	out, code = gitopsWith(t, login, "sync", "auto")
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, "is automated")

	// Another tenant's namespace is "not yours" (exit 3), as with a
	// kubeconfig (TestPluginSyncAndErrors): Argo CD shows none of it.
	for _, args := range [][]string{{"sync", "theirs"}, {"status", "theirs"}, {"list"}} {
		out, code = gitopsWith(t, login, append(args, "-n", other)...)
		assert.Equal(t, 3, code, "%v: %s", args, out)
		assert.Contains(t, out, `you may not do this in namespace "`+other+`"`, args)
	}
	out, code = gitopsWith(t, login, "status", "nope", "-n", ns)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "`list` shows what there is")

	out, code = gitopsWith(t, login, "promote", "snap-1", "--to", "staging")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "step 1 staging: success")
	assert.Contains(t, out, ": Success")

	out, code = gitopsWith(t, login, "envs", "-n", ns)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "dev (AppStudioAutomated)")
	assert.Contains(t, out, "└─ staging (AppStudioAutomated)")

	out, code = gitopsWith(t, login, "version")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "GitOps Service: ")
	assert.NotContains(t, out, "GitOps Service: unknown")

	// 2. An API token and --server, nothing else (no config file).
	token := apiToken(t, user)
	bare := []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), "ARGOCD_AUTH_TOKEN=" + token}
	out, code = gitopsWith(t, bare, "list", "-n", ns, "-o", "name", "--server", argo.ServerAddr, "--plaintext", "--grpc-web")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "gitopsdeployment.managed-gitops.redhat.com/web\n")
	assert.Contains(t, out, "snapshotenvironmentbinding.appstudio.redhat.com/appa-dev\n")
	// ...and in $ARGOCD_OPTS, as argocd reads it.
	opts := append(bare, "ARGOCD_OPTS=--server "+argo.ServerAddr+" --plaintext")
	out, code = gitopsWith(t, opts, "status", "web", "-o", "jsonpath={.status.sync.status}")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "Synced", out)

	// 3. Refused: a token Argo CD does not accept; the admin, whom the tenant
	// mapping does not name, may see but not act.
	out, code = gitopsWith(t, append(bare[:2:2], "ARGOCD_AUTH_TOKEN=not-a-token"), "list", "--server", argo.ServerAddr, "--plaintext")
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, "log in again")
	admin, err := argo.AdminSession(ctx)
	require.NoError(t, err)
	out, code = gitopsWith(t, append(bare[:2:2], "ARGOCD_AUTH_TOKEN="+admin), "sync", "web", "-n", ns, "--server", argo.ServerAddr, "--plaintext")
	assert.Equal(t, 3, code, out)
	assert.Contains(t, out, "may not act here")
	require.NoError(t, k8s.List(ctx, &runs, client.InNamespace(ns)))
	assert.Len(t, runs.Items, 1, "no run for a refused sync")
}
