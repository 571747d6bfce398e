package repositorycredentials

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
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
			v := HTTPVerifier{}.Verify(context.Background(), h.URL+path, creds, h.Roots)
			require.NotNil(t, v.URL, "a server that is not a git repository passed: %+v", v)
			assert.Nil(t, v.Credential)
			for _, text := range []string{v.URL.Message, v.Unverified} {
				assert.NotContains(t, text, h.Canary)
				assert.NotContains(t, text, "10.0.0.7")
				assert.NotContains(t, text, creds.Password)
			}
			assert.Regexp(t, `HTTP (500|302)`, v.URL.Message)
		})
	}
	assert.Empty(t, h.Leaks(), "the credentials reached plain http or another port")
}

func TestSameOriginRedirects(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		follow   bool
	}{
		{"https://git.example.com/r", "https://git.example.com/r.git", true},
		{"https://git.example.com/r", "http://git.example.com/r", false},
		{"https://git.example.com/r", "https://git.example.com:8443/r", false},
		{"https://git.example.com:443/r", "https://git.example.com/r", false},
		{"https://git.example.com/r", "https://other.example.com/r", false},
		{"https://git.example.com/r", "https://sub.git.example.com/r", false},
	} {
		from, to := mustRequest(t, tc.from), mustRequest(t, tc.to)
		err := sameOrigin(to, []*http.Request{from})
		assert.Equal(t, tc.follow, err == nil, "%s -> %s", tc.from, tc.to)
	}
}

func TestDescribeIsGeneric(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 5432}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused"},
		{&net.DNSError{Name: "postgres.internal.svc", Err: "no such host"}, "unknown host"},
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("read tcp 10.0.0.1:1->10.0.0.7:5432: %w", syscall.ECONNRESET), "connection reset"},
		{errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.6 internal-bastion"`), "connection failed"},
	}
	for _, c := range cases {
		got := describe(c.err)
		assert.Contains(t, got, c.want, c.err.Error())
		for _, leak := range []string{"10.0.0.7", "5432", "postgres", "OpenSSH", "bastion"} {
			assert.NotContains(t, got, leak)
		}
		assert.Less(t, len(got), 200)
	}
	assert.True(t, strings.HasPrefix(describe(&url.Error{Op: "Get", URL: "https://10.0.0.7:5432", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}), "TLS handshake failed"))
}

func mustRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	return r
}
