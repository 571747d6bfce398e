package netfailure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gitops-service/gitops-service/reconcilers/egress"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://10.0.0.7:5432/x", Err: err}
	}
	cases := []struct {
		err  error
		want Kind
	}{
		{wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), Refused},
		{wrap(fmt.Errorf("read: %w", syscall.ECONNRESET)), Reset},
		{wrap(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), Unreachable},
		{wrap(os.NewSyscallError("connect", syscall.ENETUNREACH)), Unreachable},
		{wrap(&net.DNSError{Name: "postgres.internal.svc", Err: "no such host"}), UnknownHost},
		{wrap(context.DeadlineExceeded), Timeout},
		{wrap(&net.DNSError{Name: "slow.internal", Err: "i/o timeout", IsTimeout: true}), Timeout},
		{wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), UntrustedCertificate},
		{wrap(&x509.UnknownAuthorityError{}), UntrustedCertificate},
		{errors.New("Get https://h: x509: certificate signed by unknown authority"), UntrustedCertificate},
		{wrap(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.7"}), InvalidCertificate},
		{wrap(x509.CertificateInvalidError{Reason: x509.Expired}), InvalidCertificate},
		{wrap(&tls.CertificateVerificationError{Err: errors.New("other")}), InvalidCertificate},
		{wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), TLS},
		{wrap(tls.AlertError(40)), TLS},
		{wrap(errors.New("tls: handshake failure")), TLS},
		{wrap(errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.6 bastion"`)), Other},
		{wrap(&net.OpError{Op: "dial", Net: "tcp", Err: &egress.RefusedError{Host: "postgres.internal", Kind: "loopback"}}), NotAllowed},
	}
	for _, c := range cases {
		got := Classify(c.err)
		assert.Equal(t, c.want, got, "%v: %s", c.err, got)
		for _, leak := range []string{"10.0.0.7", "5432", "postgres", "OpenSSH", "bastion", "slow.internal"} {
			assert.NotContains(t, got.String(), leak)
		}
		assert.NotEmpty(t, got.String())
	}
}
