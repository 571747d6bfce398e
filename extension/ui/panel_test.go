// Package ui holds the Argo CD UI panel (extension-gitops-service.js); this
// test renders it with Node.js as argocd-server's UI loads it.
package ui

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

type rendered struct {
	Registered []struct{ Group, Kind, Title string }
	Loading    []string
	Shown      []string
	Requests   []struct {
		URL     string
		Headers map[string]string
	}
}

func renderPanel(t *testing.T, app string, status int, body string) rendered {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if stack.Required() {
			t.Fatalf("node is needed to test the UI panel (hack/install-deps.sh installs nodejs): %v", err)
		}
		t.Skip("node not installed")
	}
	out, err := exec.Command(node, "testdata/harness.js", app, strconv.Itoa(status), body).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var r rendered
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r
}

const ourApp = `{"metadata":{"namespace":"argocd","name":"shop-dev-web","labels":{"app.kubernetes.io/managed-by":"gitops-service"}},"spec":{"project":"tenant-1234"}}`

func TestPanelShowsTheBindingBehindTheApplication(t *testing.T) {
	r := renderPanel(t, ourApp, 200, `{"kind":"SnapshotEnvironmentBinding","namespace":"jane","name":"shop-dev","application":"shop",
		"environment":"dev","snapshot":"shop-v2","component":"web","image":"quay.io/example/web:v2",
		"conditions":[{"type":"AllComponentsDeployed","status":"True","reason":"CommitsSynced","message":"1 of 1 components deployed"}],
		"components":[{"name":"web","sync":"Synced","health":"Healthy","commit":"0123456789abcdef"}],
		"promotionRuns":[{"name":"shop-v2-to-dev","snapshot":"shop-v2","state":"Completed","result":"Success","environments":["dev: success"],"created":"2026-11-23T07:00:00Z"}]}`)
	require.Len(t, r.Registered, 1)
	assert.Equal(t, "argoproj.io", r.Registered[0].Group)
	assert.Equal(t, "Application", r.Registered[0].Kind)
	assert.Equal(t, "GitOps Service", r.Registered[0].Title)
	assert.Contains(t, r.Loading, "Loading…")

	// The request argocd-server's proxy extension needs.
	require.Len(t, r.Requests, 1)
	assert.Equal(t, "/extensions/gitops-service/api/v1/deployment", r.Requests[0].URL)
	assert.Equal(t, "argocd:shop-dev-web", r.Requests[0].Headers["Argocd-Application-Name"])
	assert.Equal(t, "tenant-1234", r.Requests[0].Headers["Argocd-Project-Name"])

	for _, want := range []string{"SnapshotEnvironmentBinding", "jane/shop-dev", "dev", "shop-v2", "web", "quay.io/example/web:v2",
		"AllComponentsDeployed", "1 of 1 components deployed", "Synced", "Healthy", "0123456", "shop-v2-to-dev", "Success", "dev: success"} {
		assert.Contains(t, r.Shown, want)
	}
	assert.NotContains(t, r.Shown, "0123456789abcdef", "commits are shortened")
}

func TestPanelShowsAGitOpsDeployment(t *testing.T) {
	r := renderPanel(t, ourApp, 200, `{"kind":"GitOpsDeployment","namespace":"jane","name":"guestbook","type":"automated","sync":"OutOfSync","health":"Progressing"}`)
	for _, want := range []string{"GitOpsDeployment", "jane/guestbook", "automated", "OutOfSync / Progressing"} {
		assert.Contains(t, r.Shown, want)
	}
}

func TestPanelShowsTheProxysError(t *testing.T) {
	r := renderPanel(t, ourApp, 404, `{"error":"Application shop-dev-web was not made by the GitOps Service"}`)
	assert.Contains(t, r.Shown, "Application shop-dev-web was not made by the GitOps Service")
}

func TestPanelAsksNothingForOtherApplications(t *testing.T) {
	other := `{"metadata":{"namespace":"argocd","name":"not-ours","labels":{}},"spec":{"project":"default"}}`
	r := renderPanel(t, other, 200, `{}`)
	assert.Empty(t, r.Requests)
	assert.Contains(t, r.Shown, "This Application was not made by the GitOps Service.")
}
