package managedenvironment

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Issue 21 defect 6: what a cluster sent, and where the sidecar connected,
// never reach a condition; each failure is a few fixed words.
func TestDescribeIsGeneric(t *testing.T) {
	const canary = "CANARY-internal-body"
	wrap := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://10.0.0.7:5432/api/v1/namespaces", Err: err}
	}
	cases := []struct {
		err  error
		want string
	}{
		{apierrors.NewGenericServerResponse(500, "get", schema.GroupResource{Resource: "namespaces"}, "", canary+" at 10.0.0.7:5432", 0, true), "HTTP 500"},
		{apierrors.NewGenericServerResponse(503, "get", schema.GroupResource{Resource: "namespaces"}, "", canary, 0, true), "HTTP 503 (service unavailable)"},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Code: 500, Message: canary + " 10.0.0.7:5432"}}, "HTTP 500"},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Code: 302, Message: canary}}, "HTTP 302"},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Code: 0, Message: canary}}, "not understood"},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "x", errors.New(canary)), "HTTP 403 (forbidden)"},
		{apierrors.NewUnauthorized(canary), "401 Unauthorized"},
		{wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "connection refused"},
		{wrap(&net.DNSError{Name: "postgres.internal.svc", Err: "no such host"}), "unknown host"},
		{wrap(context.DeadlineExceeded), "timeout"},
		{wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "TLS handshake failed"},
		{wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "unknown authority"},
		{wrap(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.7"}), "TLS handshake failed"},
		{wrap(fmt.Errorf("read: %w", syscall.ECONNRESET)), "connection reset"},
		{wrap(errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.6 bastion"`)), "connection failed"},
	}
	for _, c := range cases {
		got := describe(c.err)
		assert.Contains(t, got, c.want, c.err.Error())
		for _, leak := range []string{canary, "10.0.0.7", "5432", "postgres", "OpenSSH"} {
			assert.NotContains(t, got, leak, c.err.Error())
		}
		assert.Less(t, len(got), 120)
		// The long sentence around it stays generic too.
		assert.False(t, strings.Contains(verifyMessage(c.err), canary))
	}
}

// verifyMessage is what verify says for err (through a client that fails with it).
func verifyMessage(err error) string {
	return (&remoteError{what: "reading Namespace kube-system", err: err}).Error()
}
