// Package netfailure names, in a few fixed words, why a connection to a
// tenant-chosen URL failed (a ManagedEnvironment's API server, a
// RepositoryCredentials' repository). The sidecar connects from inside the
// platform's network: the words never repeat an address or anything the
// server sent, so conditions and Events cannot be used to map or read
// internal services (issue 21, defect 6).
package netfailure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
)

// Kind is one kind of connection failure.
type Kind int

const (
	// Other is any failure not named below.
	Other Kind = iota
	Timeout
	Refused
	Reset
	Unreachable
	UnknownHost
	// UntrustedCertificate: signed by an authority the sidecar does not trust.
	UntrustedCertificate
	// InvalidCertificate: expired, not for this host, or otherwise refused.
	InvalidCertificate
	// TLS: the handshake failed, or the server does not speak TLS.
	TLS
	// NotAllowed: the host resolved to an address the platform's egress
	// rule refuses (reconcilers/egress); nothing was sent.
	NotAllowed
)

var words = map[Kind]string{
	Other:                "connection failed",
	Timeout:              "timeout",
	Refused:              "connection refused",
	Reset:                "connection reset",
	Unreachable:          "host unreachable",
	UnknownHost:          "unknown host",
	UntrustedCertificate: "TLS handshake failed: certificate signed by unknown authority",
	InvalidCertificate:   "TLS handshake failed: the server's certificate is not valid for it",
	TLS:                  "TLS handshake failed",
	NotAllowed:           "not connected: the host resolves to a loopback, link-local or cluster-internal address, which the platform does not allow for tenants (--probe-allow-hosts)",
}

// String is the kind's fixed words.
func (k Kind) String() string { return words[k] }

// Classify says what kind of failure err is. err is a transport error (of
// net/http or client-go's transport), not an answer: a server's status
// message must be handled before, as its text is the server's to choose.
func Classify(err error) Kind {
	var (
		dnsErr     *net.DNSError
		invalid    x509.CertificateInvalidError
		hostname   x509.HostnameError
		verify     *tls.CertificateVerificationError
		rec        tls.RecordHeaderError
		alert      tls.AlertError
		authority  x509.UnknownAuthorityError
		authorityP *x509.UnknownAuthorityError
	)
	var notAllowed *egress.RefusedError
	switch {
	case errors.As(err, &notAllowed):
		return NotAllowed
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return Timeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ECONNRESET):
		return Reset
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return Unreachable
	case errors.As(err, &dnsErr):
		return UnknownHost
	// client-go may flatten the x509 error into text on its way up.
	case errors.As(err, &authority) || errors.As(err, &authorityP) ||
		strings.Contains(err.Error(), "certificate signed by unknown authority"):
		return UntrustedCertificate
	case errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify):
		return InvalidCertificate
	case errors.As(err, &rec) || errors.As(err, &alert) || strings.HasPrefix(innermost(err).Error(), "tls: "):
		return TLS
	}
	return Other
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
