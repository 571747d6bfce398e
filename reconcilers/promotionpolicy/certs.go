package promotionpolicy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update,namespace=argocd
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;patch

// The webhook's certificate is ours: a CA and a serving certificate it
// signed, kept in one Secret of the sidecar's namespace (so every replica
// serves the same one), with the CA written into the caBundle of our
// ValidatingWebhookConfiguration. They are made again a month before the
// serving certificate expires, or when the names it must cover change.

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	renewBefore     = 30 * 24 * time.Hour
	// recheck is how often the Secret and the caBundle are looked at again.
	recheck = 10 * time.Minute
)

// Certs keeps the webhook's serving certificate.
type Certs struct {
	// Client reads and writes the Secret and the webhook configuration
	// (not through the cache: neither kind is cached).
	Client client.Client
	// Namespace and Secret name where the certificates are kept.
	Namespace, Secret string
	// WebhookConfiguration is the name of our ValidatingWebhookConfiguration.
	WebhookConfiguration string
	// Hosts are the DNS names and IPs the serving certificate is for (the
	// webhook Service's names; 127.0.0.1 in tests).
	Hosts []string
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	current atomic.Pointer[tls.Certificate]
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.current.Load(); cert != nil {
		return cert, nil
	}
	return nil, errors.New("the webhook's certificate is not ready yet")
}

// Ready is the readiness check: a certificate is loaded.
func (c *Certs) Ready() error {
	if c.current.Load() == nil {
		return errors.New("the PromotionPolicy webhook has no certificate yet")
	}
	return nil
}

// NeedLeaderElection: every replica serves the webhook.
func (c *Certs) NeedLeaderElection() bool { return false }

// Start ensures the certificates now and every recheck until ctx ends.
func (c *Certs) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("promotionpolicy-webhook")
	for {
		if err := c.Ensure(ctx); err != nil {
			log.Error(err, "ensuring the webhook's certificate")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(recheck):
		}
	}
}

func (c *Certs) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Ensure makes the Secret hold a valid CA and serving certificate for
// Hosts (creating or renewing them), serves it, and writes the CA into our
// webhook configuration's caBundle.
func (c *Certs) Ensure(ctx context.Context) error {
	s := &corev1.Secret{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Secret}, s)
	switch {
	case apierrors.IsNotFound(err):
		// Owned by the webhook configuration: deleting the install deletes
		// it, and the garbage collector the Secret it is not listed in.
		cfg := &admissionv1.ValidatingWebhookConfiguration{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: c.WebhookConfiguration}, cfg); err != nil {
			return fmt.Errorf("the ValidatingWebhookConfiguration %s: %w", c.WebhookConfiguration, err)
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Secret,
			Labels: map[string]string{"app.kubernetes.io/part-of": "gitops-service"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration",
				Name: cfg.Name, UID: cfg.UID}}}, Type: corev1.SecretTypeTLS}
		if s.Data, err = c.issue(); err != nil {
			return err
		}
		if err := c.Client.Create(ctx, s); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return c.Ensure(ctx) // another replica made it first
			}
			return err
		}
	case err != nil:
		return err
	case !c.valid(s.Data):
		if s.Data, err = c.issue(); err != nil {
			return err
		}
		s.Type = corev1.SecretTypeTLS
		if err := c.Client.Update(ctx, s); err != nil {
			return err // a conflict: the next Ensure reads what the other replica wrote
		}
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", c.Namespace, c.Secret, err)
	}
	c.current.Store(&cert)
	return c.caBundle(ctx, s.Data["ca.crt"])
}

// valid says whether data holds a serving certificate for Hosts, signed by
// its CA, that is not about to expire.
func (c *Certs) valid(data map[string][]byte) bool {
	block, _ := pem.Decode(data[corev1.TLSCertKey])
	caBlock, _ := pem.Decode(data["ca.crt"])
	if block == nil || caBlock == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil || cert.CheckSignatureFrom(ca) != nil || c.now().Add(renewBefore).After(cert.NotAfter) {
		return false
	}
	if _, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err != nil {
		return false
	}
	for _, h := range c.Hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// issue makes a CA and a serving certificate for Hosts signed by it.
func (c *Certs) issue() (map[string][]byte, error) {
	now := c.now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "gitops-service-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "gitops-service-webhook"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(servingValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range c.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"ca.crt":                pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// caBundle writes ca into the caBundle of every webhook of our
// configuration that does not have it: a JSON patch of those fields only,
// guarded by the resourceVersion read.
func (c *Certs) caBundle(ctx context.Context, ca []byte) error {
	cfg := &admissionv1.ValidatingWebhookConfiguration{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: c.WebhookConfiguration}, cfg); err != nil {
		return fmt.Errorf("the ValidatingWebhookConfiguration %s: %w", c.WebhookConfiguration, err)
	}
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": cfg.ResourceVersion}}
	for i, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, ca) && slices.ContainsFunc(w.Rules, func(r admissionv1.RuleWithOperations) bool {
			return slices.Contains(r.Resources, "promotionpolicies")
		}) {
			ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": ca})
		}
	}
	if len(ops) == 1 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return c.Client.Patch(ctx, cfg, client.RawPatch(types.JSONPatchType, patch))
}
