package gitprobe

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

func mustRequest(t *testing.T, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	return r
}
