package repositorycredentials

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/test/hostile"
)

// Issue 21 defect 6: a repository URL is the tenant's choice and the check
// runs from inside the cluster. Whatever the server answers, the verdict
// carries a status code or a kind of failure, never its body; a redirect to
// plain http or to another port of the same host never gets the credentials.
func TestVerifyRevealsNothingAndKeepsCredentialsOnHTTPS(t *testing.T) {
	h := hostile.Start(t)
	creds := argocd.RepositoryCredentials{Username: "jane", Password: "s3cret-" + t.Name()}
	for _, path := range []string{"/5xx/org/repo", "/status/org/repo", "/to-http/org/repo", "/to-port/org/repo", "/to-tls/org/repo"} {
		t.Run(path, func(t *testing.T) {
			v := GitVerifier{Egress: &egress.Policy{AllowHosts: []string{"127.0.0.1"}}}.Verify(context.Background(), h.URL+path, creds, Trust{Roots: h.Roots})
			require.NotNil(t, v.URL, "a server that is not a git repository passed: %+v", v)
			assert.Nil(t, v.Credential)
			for _, text := range []string{v.URL.Message} {
				assert.NotContains(t, text, h.Canary)
				assert.NotContains(t, text, "10.0.0.7")
				assert.NotContains(t, text, creds.Password)
			}
			assert.Regexp(t, `HTTP (500|302)`, v.URL.Message)
		})
	}
	assert.Empty(t, h.Leaks(), "the credentials reached plain http or another port")
}
