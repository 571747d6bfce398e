// Package signatures verifies, offline, that an image is signed and attested
// as an Environment requires: cosign signatures (the simple-signing payload
// in the tag sha256-<digest>.sig, its signature in the layer annotation
// dev.cosignproject.cosign/signature) and in-toto attestations (DSSE
// envelopes in sha256-<digest>.att), made by a public key or by a keyless
// certificate that chains to the platform's trusted root and names an
// issuer and subject. No transparency log is asked (there is no network to
// one): a keyless certificate is checked against the trusted root at the
// time its signature was logged when the signature carries a transparency
// log entry (cosign's bundle annotation: the entry's signed timestamp,
// verified with the log's key from the trusted root), else at the time of
// verification (see Verifier.keyless).
//
// Results are cached by digest and requirement, so a promotion that waits
// does not fetch the same signatures every pass; a tag is resolved each
// time, and a moved tag is a new digest.
package signatures

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// The cosign conventions: where signatures and attestations live and how
// their layers are annotated.
const (
	AnnotationSignature    = "dev.cosignproject.cosign/signature"
	AnnotationCertificate  = "dev.sigstore.cosign/certificate"
	AnnotationBundle       = "dev.sigstore.cosign/bundle"
	MediaTypeSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	MediaTypeDSSE          = "application/vnd.dsse.envelope.v1+json"
	PayloadTypeInToto      = "application/vnd.in-toto+json"
)

// Bounds: what one image may cost.
const (
	// maxLayers of a .sig or .att image that are looked at.
	maxLayers = 32
	// maxBlob is the largest payload or envelope read.
	maxBlob = 1 << 20
	// verifiedFor is how long a verified result is reused; notVerifiedFor
	// how long a failed one is (a signature pushed late is found soon).
	verifiedFor    = 10 * time.Minute
	notVerifiedFor = 20 * time.Second
	maxCache       = 4096
	maxMessage     = 1024
)

// Key is a public key whose signatures count, by name.
type Key struct {
	Name     string
	Verifier signature.Verifier
}

// Identity is a keyless signer whose signatures count.
type Identity struct {
	// Name is how results name it: "<issuer> <subject>" as written.
	Name     string
	identity verify.CertificateIdentity
}

// Requirement is an Environment's .spec.gates.signatures made usable.
type Requirement struct {
	Keys         []Key
	Identities   []Identity
	Attestations []string
	// AttestationsOnly: no cosign signature needed.
	AttestationsOnly bool
	// Hash identifies the requirement with its key material (the cache key).
	Hash string
}

// Compile turns the gate into a Requirement; pems are the keys' PEMs by
// name (inline or read from their ConfigMaps). A key that is not a public
// key or a regular expression that does not compile is an error naming it.
func Compile(g *as.SignatureGate, pems map[string]string) (*Requirement, error) {
	// The CRD refuses a requirement without a key or identity; one written
	// around it must not verify every image vacuously.
	// The same for the CRD's other rules.
	if len(g.Keys) == 0 && len(g.Identities) == 0 {
		return nil, fmt.Errorf("the requirement names no key and no identity")
	}
	if g.AttestationsOnly && len(g.Attestations) == 0 {
		return nil, fmt.Errorf("attestationsOnly needs at least one attestation predicate type")
	}
	for _, k := range g.Keys {
		if (k.PublicKey != "") == (k.ConfigMapKeyRef != nil) {
			return nil, fmt.Errorf("key %s: exactly one of publicKey and configMapKeyRef must be set", k.Name)
		}
	}
	for i, id := range g.Identities {
		if (id.Issuer != "") == (id.IssuerRegExp != "") || (id.Subject != "") == (id.SubjectRegExp != "") {
			return nil, fmt.Errorf("identities[%d]: exactly one of issuer and issuerRegExp, and of subject and subjectRegExp, must be set", i)
		}
	}
	r := &Requirement{Attestations: slices.Clone(g.Attestations), AttestationsOnly: g.AttestationsOnly}
	h := sha256.New()
	fmt.Fprintf(h, "%q %t\n", g.Attestations, g.AttestationsOnly)
	for _, k := range g.Keys {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(pems[k.Name]))
		if err != nil {
			return nil, fmt.Errorf("key %s is not a PEM public key", k.Name)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("key %s: %v", k.Name, err)
		}
		r.Keys = append(r.Keys, Key{Name: k.Name, Verifier: v})
		fmt.Fprintf(h, "key %q %q\n", k.Name, pems[k.Name])
	}
	for i, id := range g.Identities {
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegExp, id.Subject, id.SubjectRegExp)
		if err != nil {
			return nil, fmt.Errorf("identities[%d]: %v", i, err)
		}
		r.Identities = append(r.Identities, Identity{Name: strings.TrimSpace(or(id.Issuer, id.IssuerRegExp) + " " + or(id.Subject, id.SubjectRegExp)), identity: ci})
		fmt.Fprintf(h, "id %q %q %q %q\n", id.Issuer, id.IssuerRegExp, id.Subject, id.SubjectRegExp)
	}
	r.Hash = hex.EncodeToString(h.Sum(nil))
	return r, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Verifier checks images; one per sidecar, shared by every pass.
type Verifier struct {
	// Root is the platform's trusted root for keyless signatures; nil: no
	// keyless signature verifies.
	Root root.TrustedMaterial
	// RootHash identifies Root in the cache key.
	RootHash string
	// Now is the clock.
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	result as.ImageVerification
	until  time.Time
}

// LoadRoot reads a trusted root file (sigstore's trusted_root.json format).
func LoadRoot(data []byte) (*root.TrustedRoot, string, error) {
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return tr, hex.EncodeToString(sum[:]), nil
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Check verifies the image (of the component) against req, reading the
// registry with opts. It always answers: a registry that cannot be read, an
// unsigned or wrongly signed image is a result that is not Verified, whose
// Message says what was expected.
func (v *Verifier) Check(ctx context.Context, component, image string, req *Requirement, opts ...remote.Option) as.ImageVerification {
	out := as.ImageVerification{Component: component, Image: image}
	ref, err := name.ParseReference(image)
	if err != nil {
		out.Message = "the image is not a valid reference"
		return out
	}
	opts = append(slices.Clone(opts), remote.WithContext(ctx))
	var digest name.Digest
	if d, ok := ref.(name.Digest); ok {
		digest = d
	} else {
		// The tag is resolved every time: what is verified is what it names now.
		desc, err := remote.Head(ref, opts...)
		if err != nil {
			out.Message = "could not resolve the tag to a digest: " + registryError(err)
			return out
		}
		digest = ref.Context().Digest(desc.Digest.String())
	}
	out.Digest = digest.DigestStr()
	key := digest.String() + " " + req.Hash + " " + v.RootHash
	if r, ok := v.cached(key); ok {
		r.Component, r.Image = component, image
		return r
	}
	r, err := v.verify(digest, req, opts)
	r.Component, r.Image, r.Digest = component, image, digest.DigestStr()
	if err != nil {
		r.Verified, r.Message = false, clip("could not read the signatures: "+registryError(err))
		return r // not cached: the registry may answer next time
	}
	v.store(key, r)
	return r
}

func (v *Verifier) cached(key string) (as.ImageVerification, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.cache[key]
	if !ok || !v.now().Before(c.until) {
		return as.ImageVerification{}, false
	}
	return *c.result.DeepCopy(), true
}

func (v *Verifier) store(key string, r as.ImageVerification) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cache == nil || len(v.cache) >= maxCache {
		v.cache = map[string]cached{} // crude, bounded: a full cache starts over
	}
	ttl := notVerifiedFor
	if r.Verified {
		ttl = verifiedFor
	}
	v.cache[key] = cached{result: *r.DeepCopy(), until: v.now().Add(ttl)}
}

// verify reads the image's signatures and attestations and decides. An
// error is a registry that could not be read (not a missing signature).
func (v *Verifier) verify(digest name.Digest, req *Requirement, opts []remote.Option) (as.ImageVerification, error) {
	var out as.ImageVerification
	signers := map[string]bool{}
	var problems []string
	signed := false
	if !req.AttestationsOnly {
		layers, err := v.layers(digest, ".sig", opts)
		if err != nil {
			return out, err
		}
		for _, l := range layers {
			who, err := v.verifySignature(digest, req, l)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			signed = true
			signers[who] = true
		}
	}
	attested := map[string]bool{}
	if len(req.Attestations) > 0 {
		layers, err := v.layers(digest, ".att", opts)
		if err != nil {
			return out, err
		}
		for _, l := range layers {
			who, predicate, err := v.verifyAttestation(digest, req, l)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			signers[who] = true
			attested[predicate] = true
		}
	}
	var missing []string
	if !req.AttestationsOnly && !signed {
		missing = append(missing, "a cosign signature by "+req.signers())
	}
	for _, p := range req.Attestations {
		if !attested[p] {
			missing = append(missing, fmt.Sprintf("an attestation of predicate type %s signed by %s", p, req.signers()))
		}
	}
	out.Signers = capped(signers)
	out.Attestations = capped(attested)
	if len(missing) == 0 {
		out.Verified = true
		return out, nil
	}
	msg := "expected " + strings.Join(missing, " and ")
	if len(problems) > 0 {
		slices.Sort(problems)
		msg += "; found: " + strings.Join(slices.Compact(problems), "; ")
	} else {
		msg += "; found none"
	}
	out.Message = clip(msg)
	return out, nil
}

// signers says who may sign, for messages.
func (r *Requirement) signers() string {
	var names []string
	for _, k := range r.Keys {
		names = append(names, "key "+k.Name)
	}
	for _, i := range r.Identities {
		names = append(names, "identity "+i.Name)
	}
	return strings.Join(names, " or ")
}

// layer is one signature or attestation: its content and annotations.
type layer struct {
	mediaType   string
	annotations map[string]string
	content     []byte
}

// layers reads the layers of the image tagged sha256-<hex><suffix> next to
// digest; none when there is no such tag.
func (v *Verifier) layers(digest name.Digest, suffix string, opts []remote.Option) ([]layer, error) {
	algo, hexd, _ := strings.Cut(digest.DigestStr(), ":")
	tag := digest.Context().Tag(algo + "-" + hexd + suffix)
	img, err := remote.Image(tag, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	var out []layer
	for i, d := range m.Layers {
		if i == maxLayers {
			break
		}
		if d.Size > maxBlob {
			continue
		}
		b, err := blob(img, d.Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, layer{mediaType: string(d.MediaType), annotations: d.Annotations, content: b})
	}
	return out, nil
}

func blob(img v1.Image, h v1.Hash) ([]byte, error) {
	l, err := img.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed() // the blob as stored: cosign's layers are not compressed
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxBlob))
}

// simpleSigning is the part of cosign's payload that binds it to an image.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// verifySignature says who signed the layer's payload for digest, or why it
// does not count.
func (v *Verifier) verifySignature(digest name.Digest, req *Requirement, l layer) (string, error) {
	var p simpleSigning
	if err := json.Unmarshal(l.content, &p); err != nil || p.Critical.Type != "cosign container image signature" {
		return "", errors.New("a signature whose payload is not a cosign simple-signing payload")
	}
	if p.Critical.Image.DockerManifestDigest != digest.DigestStr() {
		return "", errors.New("a signature of another digest")
	}
	sig, err := base64.StdEncoding.DecodeString(l.annotations[AnnotationSignature])
	if err != nil || len(sig) == 0 {
		return "", errors.New("a signature layer without a signature")
	}
	at := v.now()
	if l.annotations[AnnotationBundle] != "" && l.annotations[AnnotationCertificate] != "" {
		t, err := v.loggedAt(l, sig)
		if err != nil {
			return "", fmt.Errorf("a keyless signature whose transparency log entry does not verify (%v)", err)
		}
		at = t
	}
	return v.signer(req, l, at, func(ver signature.Verifier) error {
		return ver.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.content))
	})
}

// bundle is cosign's record of a signature's transparency log entry.
type bundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// hashedRekord is the part of a hashedrekord log entry that binds it to a
// signature: the signature, the certificate and the payload's digest.
type hashedRekord struct {
	Kind string `json:"kind"`
	Spec struct {
		Signature struct {
			Content   []byte `json:"content"`
			PublicKey struct {
				Content []byte `json:"content"`
			} `json:"publicKey"`
		} `json:"signature"`
		Data struct {
			Hash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"hash"`
		} `json:"data"`
	} `json:"spec"`
}

// loggedAt is when the layer's signature was logged, from its bundle: the
// entry's signed timestamp (SET) verifies with a log of the trusted root,
// and the entry is of this signature, certificate and payload. Offline:
// the entry's inclusion in the log is not checked (no network to it).
func (v *Verifier) loggedAt(l layer, sig []byte) (time.Time, error) {
	if v.Root == nil {
		return time.Time{}, errors.New("no trusted root")
	}
	var b bundle
	if err := json.Unmarshal([]byte(l.annotations[AnnotationBundle]), &b); err != nil {
		return time.Time{}, errors.New("the bundle is not cosign's")
	}
	body, err := base64.StdEncoding.DecodeString(b.Payload.Body)
	logID, err2 := hex.DecodeString(b.Payload.LogID)
	var rec hashedRekord
	if err != nil || err2 != nil || json.Unmarshal(body, &rec) != nil || rec.Kind != "hashedrekord" {
		return time.Time{}, errors.New("the entry is not a hashedrekord")
	}
	e, err := tlog.NewEntry(body, b.Payload.IntegratedTime, b.Payload.LogIndex, logID, b.SignedEntryTimestamp, nil)
	if err != nil {
		return time.Time{}, errors.New("the entry cannot be read")
	}
	if err := tlog.VerifySET(e, v.Root.RekorLogs()); err != nil {
		return time.Time{}, fmt.Errorf("its signed timestamp: %v", err)
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(rec.Spec.Signature.PublicKey.Content)
	ours, err2 := cryptoutils.UnmarshalCertificatesFromPEM([]byte(l.annotations[AnnotationCertificate]))
	sum := sha256.Sum256(l.content)
	if err != nil || err2 != nil || len(certs) == 0 || len(ours) == 0 || !certs[0].Equal(ours[0]) || !bytes.Equal(rec.Spec.Signature.Content, sig) ||
		rec.Spec.Data.Hash.Algorithm != "sha256" || rec.Spec.Data.Hash.Value != hex.EncodeToString(sum[:]) {
		return time.Time{}, errors.New("the entry is of another signature")
	}
	return e.IntegratedTime(), nil
}

// statement is the part of an in-toto statement that is checked.
type statement struct {
	PredicateType string `json:"predicateType"`
	Subject       []struct {
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
}

type envelope struct {
	PayloadType string `json:"payloadType"`
	Payload     string `json:"payload"`
}

// verifyAttestation says who signed the layer's DSSE envelope for digest
// and its predicate type, or why it does not count.
func (v *Verifier) verifyAttestation(digest name.Digest, req *Requirement, l layer) (string, string, error) {
	var env envelope
	if err := json.Unmarshal(l.content, &env); err != nil || env.PayloadType != PayloadTypeInToto {
		return "", "", errors.New("an attestation that is not a DSSE envelope of an in-toto statement")
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	var st statement
	if err != nil || json.Unmarshal(payload, &st) != nil {
		return "", "", errors.New("an attestation whose payload is not an in-toto statement")
	}
	_, hexd, _ := strings.Cut(digest.DigestStr(), ":")
	if !slices.ContainsFunc(st.Subject, func(s struct {
		Digest map[string]string `json:"digest"`
	}) bool {
		return strings.EqualFold(s.Digest["sha256"], hexd)
	}) {
		return "", "", fmt.Errorf("an attestation of predicate type %s about another digest", st.PredicateType)
	}
	if !slices.Contains(req.Attestations, st.PredicateType) {
		return "", "", fmt.Errorf("an attestation of predicate type %s", st.PredicateType)
	}
	who, err := v.signer(req, l, v.now(), func(ver signature.Verifier) error {
		return dsse.WrapVerifier(ver).VerifySignature(bytes.NewReader(l.content), nil)
	})
	if err != nil {
		if rest, ok := strings.CutPrefix(err.Error(), "a signature "); ok {
			return "", "", fmt.Errorf("an attestation of predicate type %s %s", st.PredicateType, rest)
		}
		return "", "", fmt.Errorf("an attestation of predicate type %s: %v", st.PredicateType, err)
	}
	return who, st.PredicateType, nil
}

// signer is the first of req's keys, or of its identities when the layer
// carries a certificate (checked at the time at), for which check passes.
func (v *Verifier) signer(req *Requirement, l layer, at time.Time, check func(signature.Verifier) error) (string, error) {
	if pemCert := l.annotations[AnnotationCertificate]; pemCert != "" {
		return v.keyless(req, pemCert, at, check)
	}
	for _, k := range req.Keys {
		if check(k.Verifier) == nil {
			return "key " + k.Name, nil
		}
	}
	return "", errors.New("a signature by none of the keys")
}

// keyless checks a Fulcio-style certificate: it chains to the trusted root
// at the time at, its key made the signature, and it names one of the
// identities. at is when a verified transparency log entry says it signed;
// without one there is no proof of when, so at is the time of checking.
func (v *Verifier) keyless(req *Requirement, pemCert string, at time.Time, check func(signature.Verifier) error) (string, error) {
	if len(req.Identities) == 0 {
		return "", errors.New("a keyless signature (the Environment names no identity)")
	}
	if v.Root == nil {
		return "", errors.New("a keyless signature, and the GitOps Service has no trusted root (--sigstore-trusted-root)")
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(pemCert))
	if err != nil || len(certs) == 0 {
		return "", errors.New("a keyless signature with an unreadable certificate")
	}
	cert := certs[0]
	if !chains(v.Root, cert, at) {
		return "", errors.New("a keyless signature whose certificate does not chain to the trusted root (or was not valid when it signed)")
	}
	ver, err := signature.LoadVerifier(cert.PublicKey, crypto.SHA256)
	if err != nil || check(ver) != nil {
		return "", errors.New("a keyless signature that its certificate's key did not make")
	}
	sum, err := certificate.SummarizeCertificate(cert)
	if err != nil {
		return "", errors.New("a keyless signature whose certificate names no identity")
	}
	for _, id := range req.Identities {
		if id.identity.Verify(sum) == nil {
			return "identity " + sum.Extensions.Issuer + " " + sum.SubjectAlternativeName, nil
		}
	}
	return "", fmt.Errorf("a keyless signature by identity %s %s", sum.Extensions.Issuer, sum.SubjectAlternativeName)
}

func chains(tm root.TrustedMaterial, cert *x509.Certificate, at time.Time) bool {
	for _, ca := range tm.FulcioCertificateAuthorities() {
		if _, err := ca.Verify(cert, at); err == nil {
			return true
		}
	}
	return false
}

// registryError is a registry failure as a result may say it: the
// registry's error codes or the status, never a credential (go-containerregistry
// does not put one in its errors; a URL's query is dropped anyway).
func registryError(err error) string {
	var te *transport.Error
	if errors.As(err, &te) {
		var codes []string
		for _, d := range te.Errors {
			codes = append(codes, string(d.Code))
		}
		if len(codes) > 0 {
			return fmt.Sprintf("%d %s", te.StatusCode, strings.Join(codes, ", "))
		}
		return fmt.Sprintf("status %d", te.StatusCode)
	}
	return clip(err.Error())
}

func capped(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		if len(k) > 512 {
			k = k[:509] + "..."
		}
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) > 16 {
		out = out[:16]
	}
	return out
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}
