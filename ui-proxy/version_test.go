package uiproxy_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/extension/buildinfo"
	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// The version header (for `argocd gitops version` with an Argo CD login) is
// on answers to argocd-server only.
func TestVersionHeaderOnlyThroughArgoCDServer(t *testing.T) {
	defer func(v string) { buildinfo.Version = v }(buildinfo.Version)
	buildinfo.Version = "v9.8.7"
	srv := serve(t)
	for tok, want := range map[string]string{secret: "v9.8.7", "": "", "wrong": ""} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/deployment", nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set(uiproxy.HeaderToken, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.Header.Get(uiproxy.HeaderVersion), "token %q", tok)
	}
}
