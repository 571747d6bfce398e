package promotionpolicy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The serving certificate is issued for the hosts, by the CA kept beside
// it, and made again a month before it expires or when the hosts change.
func TestCertificatesAreIssuedAndRenewed(t *testing.T) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	c := &Certs{Hosts: []string{"gitops-service-webhook.argocd.svc", "127.0.0.1"}, Now: func() time.Time { return now }}
	data, err := c.issue()
	require.NoError(t, err)
	assert.True(t, c.valid(data))

	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(data["ca.crt"]))
	for _, h := range c.Hosts {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.NoError(t, err, "for %s", h)
	}

	other := &Certs{Hosts: []string{"gitops-service-webhook.other.svc"}, Now: c.Now}
	assert.False(t, other.valid(data), "hosts changed")
	late := &Certs{Hosts: c.Hosts, Now: func() time.Time { return now.Add(servingValidity - renewBefore + time.Hour) }}
	assert.False(t, late.valid(data), "about to expire")

	// Another CA's certificate, or a key of another pair, is not ours.
	data2, err := c.issue()
	require.NoError(t, err)
	mixed := map[string][]byte{"ca.crt": data2["ca.crt"], corev1.TLSCertKey: data[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: data[corev1.TLSPrivateKeyKey]}
	assert.False(t, c.valid(mixed), "signed by another CA")
	mixed = map[string][]byte{"ca.crt": data["ca.crt"], corev1.TLSCertKey: data[corev1.TLSCertKey], corev1.TLSPrivateKeyKey: data2[corev1.TLSPrivateKeyKey]}
	assert.False(t, c.valid(mixed), "key of another pair")
	block, _ := pem.Decode(data["ca.crt"])
	ca, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.True(t, ca.IsCA)
	assert.False(t, c.valid(map[string][]byte{}), "empty")
}
