package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// callPanelAPI calls the UI panel's API as the panel does, logged in as the
// admin: through argocd-server's proxy extension, which adds the secret header.
func callPanelAPI(t *testing.T, app, project string) (int, map[string]any) {
	t.Helper()
	token, err := argo.AdminSession(context.Background())
	require.NoError(t, err)
	return callPanelAPIAs(t, token, app, project)
}

// callPanelAPIAs calls the panel's API with the session token of a user (the
// browser sends it as a cookie).
func callPanelAPIAs(t *testing.T, token, app, project string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+argo.ServerAddr+"/extensions/"+uiproxy.ExtensionName+"/api/v1/deployment", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: stack.AuthCookie, Value: token})
	req.Header.Set(uiproxy.HeaderApplication, argo.Namespace+":"+app)
	req.Header.Set(uiproxy.HeaderProject, project)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestUIPanelThroughArgoCDServer: the real argocd-server forwards the panel's
// request to the sidecar with the secret header; the answer is the deployment
// behind the Application. A request straight to the sidecar is refused.
func TestUIPanelThroughArgoCDServer(t *testing.T) {
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("panel", "x")})
	gd := deploy(t, ns, "shown", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)
	waitStatus(t, gd, "Synced", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeSynced })
	app := application(t, gd)

	// argocd-server reads extension.config when it changes: allow for that.
	var status int
	var body map[string]any
	require.Eventually(t, func() bool {
		status, body = callPanelAPI(t, app.Name, app.Spec.Project)
		return status == http.StatusOK
	}, informerWait, poll, "the panel's API never answered through argocd-server: %d %v", status, body)
	assert.Equal(t, "GitOpsDeployment", body["kind"])
	assert.Equal(t, ns, body["namespace"])
	assert.Equal(t, "shown", body["name"])
	assert.Equal(t, "Synced", body["sync"])

	// argocd-server checks the project header against the Application.
	status, _ = callPanelAPI(t, app.Name, "default")
	assert.NotEqual(t, http.StatusOK, status, "a wrong project was forwarded")

	// Without a session argocd-server forwards nothing.
	status, _ = callPanelAPIAs(t, "", app.Name, app.Spec.Project)
	assert.NotEqual(t, http.StatusOK, status, "an anonymous request was forwarded")

	// Straight to the sidecar, without argocd-server's header: refused.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, side.UIProxyURL+"/api/v1/deployment", nil)
	require.NoError(t, err)
	req.Header.Set(uiproxy.HeaderApplication, argo.Namespace+":"+app.Name)
	req.Header.Set(uiproxy.HeaderProject, app.Spec.Project)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
