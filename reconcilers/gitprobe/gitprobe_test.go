package gitprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

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

// A repository on loopback is not asked by default: the probe fails with
// fixed words before anything is sent; allowed, it is read.
func TestRefsRefusesLoopbackByDefault(t *testing.T) {
	asked := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = w.Write([]byte("001e# service=git-upload-pack\nSECRET-BODY"))
	}))
	defer srv.Close()
	for _, u := range []string{srv.URL + "/r.git", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/r.git"} {
		res := Refs(context.Background(), nil, u, "", "", nil)
		assert.Equal(t, Result{Answer: Failed, Detail: netfailure.NotAllowed.String()}, res, u)
		assert.NotContains(t, res.Detail, "SECRET-BODY")
	}
	assert.Empty(t, asked, "nothing reached the server")
	assert.Equal(t, Readable, Refs(context.Background(), loopback, srv.URL+"/r.git", "", "", nil).Answer)
	assert.Len(t, asked, 1)
}

func mustRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	return r
}
