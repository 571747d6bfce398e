package install

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The platform's user of another proxy extension, its Application and
// project: what the pre-seeded RBAC lines (proxyUserPolicy) grant.
const (
	proxyUser     = "platform-user"
	proxyPassword = "platform-user-password"
	proxyProject  = "platform"
	proxyApp      = "guestbook"
)

// proxyUserPolicy is the admin's policy.csv lines letting proxyUser see
// proxyApp and invoke extension ext, as Argo CD's proxy extensions require.
func proxyUserPolicy(ext string) string {
	return fmt.Sprintf("p, %s, applications, get, %s/*, allow\np, %s, extensions, invoke, %s, allow\n", proxyUser, proxyProject, proxyUser, ext)
}

// otherExtensionConfig is the argocd-cm value of another extension whose
// backend is b.
func otherExtensionConfig(b *stack.ExtensionBackend) string {
	return "services:\n- url: " + b.URL + "\n"
}

// seedProxyUser does what the admin does besides the argocd-cm and RBAC keys
// (given by each install path its own way): proxyUser's password, and the
// project and Application its extension calls name.
func seedProxyUser(t *testing.T, ctx context.Context, kube *stack.Kube, ns string) {
	t.Helper()
	require.NoError(t, stack.SetPassword(ctx, kube, ns, proxyUser, proxyPassword))
	require.NoError(t, stack.CreateProxyApplication(ctx, kube, ns, proxyProject, proxyApp))
}

// argoCDServes starts argocd-server (the stack's binary) against namespace ns
// as the install path left it and checks that it answers GET
// /api/v1/settings and that the other extension ext's proxy route reaches its
// backend b for proxyUser and brings the backend's answer back.
func argoCDServes(t *testing.T, ctx context.Context, kube *stack.Kube, ns, when, ext string, b *stack.ExtensionBackend) map[string]any {
	t.Helper()
	srv, err := stack.StartSettingsServer(ctx, kube, ns)
	require.NoError(t, err, when)
	defer srv.Stop()
	settings, err := srv.Settings(ctx)
	require.NoError(t, err, "%s: argocd-server finds its settings", when)
	token, err := srv.Session(ctx, proxyUser, proxyPassword)
	require.NoError(t, err, "%s: the other extension's user logs in", when)

	path := fmt.Sprintf("/check/%d", len(b.Requests()))
	var status int
	var body []byte
	// argocd-server builds its proxies from its settings informer: allow it a moment.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		status, body, err = srv.CallExtension(ctx, token, ext, path, ns+":"+proxyApp, proxyProject)
		if (err == nil && status == http.StatusOK) || time.Now().After(deadline) {
			break
		}
	}
	require.True(t, err == nil && status == http.StatusOK, "%s: /extensions/%s%s through argocd-server: %d %.300s %v\nargocd-server log:\n%s",
		when, ext, path, status, body, err, srv.Tail(30))
	assert.Equal(t, stack.ExtensionBackendAnswer, string(body), "%s: the other extension's answer", when)
	assert.Contains(t, b.Requests(), stack.ExtensionRequest{Path: path, Application: ns + ":" + proxyApp, Project: proxyProject},
		"%s: the other extension's backend got the call", when)
	return settings
}
