package uiproxy_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	uiproxy "github.com/gitops-service/gitops-service/ui-proxy"
)

// The version header (for `argocd gitops version` with an Argo CD login) is
// on answers to argocd-server only.
func TestVersionHeaderOnlyThroughArgoCDServer(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	srv := httptest.NewServer((&uiproxy.Server{Client: c, ArgoNamespace: argoNS, Token: func() []byte { return []byte(secret) }, Version: "v9.8.7"}).Handler())
	t.Cleanup(srv.Close)
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
