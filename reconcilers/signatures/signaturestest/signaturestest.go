// Package signaturestest signs real images the cosign way for tests: a
// registry served on loopback (go-containerregistry's), random images
// pushed to it, signatures and attestations written to their .sig and .att
// tags with keys made here, and a keyless CA with Fulcio-style leaf
// certificates and the trusted root file that trusts it.
package signaturestest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/gitops-service/gitops-service/reconcilers/signatures"
)

// Registry serves an OCI registry on loopback for the test; its host:port.
func Registry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// Push pushes a random image to ref (host/repo:tag) and returns its digest reference.
func Push(t testing.TB, ref string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(h.String())
}

// Key is a signing key made for the test.
type Key struct {
	signature.SignerVerifier
	// PEM is the public key.
	PEM  string
	priv *ecdsa.PrivateKey
}

// NewKey makes an ECDSA P-256 key, as cosign generate-key-pair does.
func NewKey(t testing.TB) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return &Key{SignerVerifier: sv, PEM: string(pem), priv: priv}
}

// Payload is cosign's simple-signing payload for digest.
func Payload(digest name.Digest) []byte {
	p := map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": digest.Context().String()},
			"image":    map[string]string{"docker-manifest-digest": digest.DigestStr()},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	}
	b, _ := json.Marshal(p)
	return b
}

// Sign writes a signature of digest by k to its .sig tag (appended to the
// signatures already there); cert, when given, is the PEM of a keyless
// certificate for k's key, put beside it.
func Sign(t testing.TB, digest name.Digest, k *Key, cert []byte) {
	t.Helper()
	SignLogged(t, digest, k, cert, nil, time.Time{})
}

// SignLogged is Sign with, when lg is given, cosign's bundle of a
// transparency log entry of the signature that lg says it logged at at.
func SignLogged(t testing.TB, digest name.Digest, k *Key, cert []byte, lg *Log, at time.Time) {
	t.Helper()
	payload := Payload(digest)
	sig, err := k.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{signatures.AnnotationSignature: base64.StdEncoding.EncodeToString(sig)}
	if cert != nil {
		ann[signatures.AnnotationCertificate] = string(cert)
	}
	if lg != nil {
		ann[signatures.AnnotationBundle] = lg.Bundle(t, payload, sig, cert, at)
	}
	appendLayer(t, digest, ".sig", static.NewLayer(payload, signatures.MediaTypeSimpleSigning), ann)
}

// Log is a transparency log made for the test (Rekor's part): it signs
// entries' timestamps with its key.
type Log struct {
	ID   []byte
	priv *ecdsa.PrivateKey
}

// MakeLog makes a log key; its ID is the SHA-256 of its public key, as Rekor's.
func MakeLog() (*Log, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(der)
	return &Log{ID: id[:], priv: priv}, nil
}

// NewLog is MakeLog in a test.
func NewLog(t testing.TB) *Log {
	t.Helper()
	lg, err := MakeLog()
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// Bundle is cosign's bundle annotation for a hashedrekord entry of the
// signature, its signed entry timestamp made with the log's key.
func (lg *Log) Bundle(t testing.TB, payload, sig, cert []byte, at time.Time) string {
	t.Helper()
	sum := sha256.Sum256(payload)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]string{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
		"signature": map[string]any{"content": base64.StdEncoding.EncodeToString(sig), "publicKey": map[string]string{"content": base64.StdEncoding.EncodeToString(cert)}},
	}})
	entry := map[string]any{"body": base64.StdEncoding.EncodeToString(body), "integratedTime": at.Unix(), "logID": hex.EncodeToString(lg.ID), "logIndex": 1}
	// encoding/json sorts a map's keys: the canonical form of these values.
	canonical, _ := json.Marshal(entry)
	h := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, lg.priv, h[:])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": entry})
	return string(b)
}

// SignPayload writes an arbitrary signed payload to digest's .sig tag
// (a signature of another image's payload, say).
func SignPayload(t testing.TB, digest name.Digest, k *Key, payload []byte) {
	t.Helper()
	sig, err := k.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	appendLayer(t, digest, ".sig", static.NewLayer(payload, signatures.MediaTypeSimpleSigning),
		map[string]string{signatures.AnnotationSignature: base64.StdEncoding.EncodeToString(sig)})
}

// SignWithBundle signs digest like Sign with cert, and puts bundle (a log
// entry of something else, say) beside it.
func SignWithBundle(t testing.TB, digest name.Digest, k *Key, cert []byte, bundle string) {
	t.Helper()
	payload := Payload(digest)
	sig, err := k.SignMessage(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	appendLayer(t, digest, ".sig", static.NewLayer(payload, signatures.MediaTypeSimpleSigning), map[string]string{
		signatures.AnnotationSignature: base64.StdEncoding.EncodeToString(sig), signatures.AnnotationCertificate: string(cert), signatures.AnnotationBundle: bundle})
}

// Attest writes an in-toto attestation of predicateType about digest,
// signed by k in a DSSE envelope, to its .att tag.
func Attest(t testing.TB, digest name.Digest, k *Key, predicateType string, cert []byte) {
	t.Helper()
	_, hexd, _ := strings.Cut(digest.DigestStr(), ":")
	st, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": digest.Context().String(), "digest": map[string]string{"sha256": hexd}}},
		"predicateType": predicateType,
		"predicate":     map[string]any{"buildDefinition": map[string]string{"buildType": "https://example.com/test"}},
	})
	env, err := dsse.WrapSigner(k, signatures.PayloadTypeInToto).SignMessage(bytes.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{"predicateType": predicateType}
	if cert != nil {
		ann[signatures.AnnotationCertificate] = string(cert)
	}
	appendLayer(t, digest, ".att", static.NewLayer(env, signatures.MediaTypeDSSE), ann)
}

// appendLayer adds a layer to the image tagged sha256-<hex><suffix>, making it when there is none.
func appendLayer(t testing.TB, digest name.Digest, suffix string, l v1.Layer, ann map[string]string) {
	t.Helper()
	algo, hexd, _ := strings.Cut(digest.DigestStr(), ":")
	tag := digest.Context().Tag(algo + "-" + hexd + suffix)
	base, err := remote.Image(tag)
	if err != nil {
		base = mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, Annotations: ann})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}

// CA is a keyless certificate authority made for the test (Fulcio's part).
type CA struct {
	Cert *x509.Certificate
	priv *ecdsa.PrivateKey
}

// NewCA makes a self-signed root.
func NewCA(t testing.TB) *CA {
	t.Helper()
	ca, err := MakeCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// MakeCA is NewCA outside a test (a TestMain).
func MakeCA() (*CA, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test sigstore root", Organization: []string{"gitops-service tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, priv: priv}, nil
}

// oidIssuerV2 is Fulcio's OIDC issuer extension (a DER UTF8String).
var oidIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}

// Leaf issues a code-signing certificate for k's key naming the OIDC
// issuer and the subject (an e-mail address), valid for validFor from now
// (negative: expired that long ago); its PEM.
func (ca *CA) Leaf(t testing.TB, k *Key, issuer, email string, validFor time.Duration) []byte {
	t.Helper()
	iss, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	notBefore, notAfter := time.Now().Add(-time.Minute), time.Now().Add(validFor)
	if validFor < 0 {
		notBefore, notAfter = time.Now().Add(2*validFor), time.Now().Add(validFor)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses: []string{email}, ExtraExtensions: []pkix.Extension{{Id: oidIssuerV2, Value: iss}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, k.priv.Public(), ca.priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cryptoutils.MarshalCertificateToPEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

// TrustedRoot is a trusted_root.json that trusts the CA for keyless
// signatures, and the logs for the times their entries say.
func (ca *CA) TrustedRoot(t testing.TB, logs ...*Log) []byte {
	t.Helper()
	b, err := ca.TrustedRootJSON(logs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TrustedRootJSON is TrustedRoot outside a test.
func (ca *CA) TrustedRootJSON(logs ...*Log) ([]byte, error) {
	tlogs := map[string]*root.TransparencyLog{}
	for _, lg := range logs {
		tlogs[hex.EncodeToString(lg.ID)] = &root.TransparencyLog{BaseURL: "https://rekor.test", ID: lg.ID, ValidityPeriodStart: ca.Cert.NotBefore,
			HashFunc: crypto.SHA256, PublicKey: lg.priv.Public(), SignatureHashFunc: crypto.SHA256}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca.Cert, ValidityPeriodStart: ca.Cert.NotBefore, URI: "https://fulcio.test"}},
		nil, nil, tlogs)
	if err != nil {
		return nil, err
	}
	return tr.MarshalJSON()
}
