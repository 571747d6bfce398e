package signatures_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/signatures"
	"github.com/gitops-service/gitops-service/reconcilers/signatures/signaturestest"
)

const slsa = "https://slsa.dev/provenance/v1"

func keyed(t *testing.T, keys map[string]*signaturestest.Key, g as.SignatureGate) *signatures.Requirement {
	t.Helper()
	pems := map[string]string{}
	for n, k := range keys {
		g.Keys = append(g.Keys, as.SignatureKey{Name: n, PublicKey: k.PEM})
		pems[n] = k.PEM
	}
	r, err := signatures.Compile(&g, pems)
	require.NoError(t, err)
	return r
}

func TestKeyedSignatures(t *testing.T) {
	host := signaturestest.Registry(t)
	ctx := context.Background()
	ci, other := signaturestest.NewKey(t), signaturestest.NewKey(t)
	req := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{})
	v := &signatures.Verifier{}

	unsigned := signaturestest.Push(t, host+"/team/unsigned:v1")
	r := v.Check(ctx, "c", unsigned.String(), req)
	assert.False(t, r.Verified)
	assert.Equal(t, unsigned.DigestStr(), r.Digest)
	assert.Equal(t, "expected a cosign signature by key ci; found none", r.Message)

	wrong := signaturestest.Push(t, host+"/team/wrong:v1")
	signaturestest.Sign(t, wrong, other, nil)
	r = v.Check(ctx, "c", wrong.String(), req)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "found: a signature by none of the keys")

	// A signature of another image's payload, by the right key, copied here.
	copied := signaturestest.Push(t, host+"/team/copied:v1")
	signaturestest.SignPayload(t, copied, ci, signaturestest.Payload(wrong))
	r = v.Check(ctx, "c", copied.String(), req)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "a signature of another digest")

	good := signaturestest.Push(t, host+"/team/good:v1")
	signaturestest.Sign(t, good, other, nil)
	signaturestest.Sign(t, good, ci, nil)
	r = v.Check(ctx, "c", host+"/team/good:v1", req)
	assert.True(t, r.Verified, r.Message)
	assert.Equal(t, []string{"key ci"}, r.Signers)
	assert.Equal(t, good.DigestStr(), r.Digest, "the tag is resolved and its digest verified")
	assert.Equal(t, host+"/team/good:v1", r.Image)
	assert.Empty(t, r.Message)
}

func TestATagMovedToAnUnsignedDigestIsNotVerified(t *testing.T) {
	host := signaturestest.Registry(t)
	ci := signaturestest.NewKey(t)
	req := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{})
	v := &signatures.Verifier{}
	first := signaturestest.Push(t, host+"/team/app:latest")
	signaturestest.Sign(t, first, ci, nil)
	require.True(t, v.Check(context.Background(), "c", host+"/team/app:latest", req).Verified)

	moved := signaturestest.Push(t, host+"/team/app:latest")
	r := v.Check(context.Background(), "c", host+"/team/app:latest", req)
	assert.False(t, r.Verified, "the cached result of the old digest does not answer for the new one")
	assert.Equal(t, moved.DigestStr(), r.Digest)
}

func TestAttestations(t *testing.T) {
	host := signaturestest.Registry(t)
	ctx := context.Background()
	ci, other := signaturestest.NewKey(t), signaturestest.NewKey(t)
	now := time.Now()
	v := &signatures.Verifier{Now: func() time.Time { return now }}
	both := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{Attestations: []string{slsa}})
	only := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{Attestations: []string{slsa}, AttestationsOnly: true})

	img := signaturestest.Push(t, host+"/team/att:v1")
	signaturestest.Attest(t, img, ci, "https://spdx.dev/Document", nil)
	signaturestest.Attest(t, img, other, slsa, nil)
	r := v.Check(ctx, "c", img.String(), only)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "expected an attestation of predicate type "+slsa+" signed by key ci")
	assert.Contains(t, r.Message, "an attestation of predicate type https://spdx.dev/Document")
	assert.Contains(t, r.Message, "an attestation of predicate type "+slsa+" by none of the keys")

	signaturestest.Attest(t, img, ci, slsa, nil)
	assert.False(t, v.Check(ctx, "c", img.String(), only).Verified, "a failed result is reused for a short while")
	now = now.Add(21 * time.Second)
	r = v.Check(ctx, "c", img.String(), only)
	assert.True(t, r.Verified, r.Message)
	assert.Equal(t, []string{slsa}, r.Attestations)
	assert.Equal(t, []string{"key ci"}, r.Signers)

	// The signature is required too unless attestationsOnly.
	r = v.Check(ctx, "c", img.String(), both)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "expected a cosign signature by key ci")
	signaturestest.Sign(t, img, ci, nil)
	now = now.Add(21 * time.Second)
	assert.True(t, v.Check(ctx, "c", img.String(), both).Verified)
}

func TestKeyless(t *testing.T) {
	host := signaturestest.Registry(t)
	ctx := context.Background()
	ca, rogue := signaturestest.NewCA(t), signaturestest.NewCA(t)
	tr, hash, err := signatures.LoadRoot(ca.TrustedRoot(t))
	require.NoError(t, err)
	v := &signatures.Verifier{Root: tr, RootHash: hash}
	g := as.SignatureGate{Identities: []as.KeylessIdentity{{Issuer: "https://token.ci.example", SubjectRegExp: `^.*@ci\.example$`}}}
	req, err := signatures.Compile(&g, nil)
	require.NoError(t, err)

	for _, c := range []struct {
		name     string
		ca       *signaturestest.CA
		issuer   string
		subject  string
		validFor time.Duration
		verified bool
		message  string
	}{
		{"right identity", ca, "https://token.ci.example", "build@ci.example", time.Hour, true, ""},
		{"another subject", ca, "https://token.ci.example", "mallory@evil.example", time.Hour, false, "a keyless signature by identity https://token.ci.example mallory@evil.example"},
		{"another issuer", ca, "https://evil.example", "build@ci.example", time.Hour, false, "a keyless signature by identity https://evil.example build@ci.example"},
		{"a CA the platform does not trust", rogue, "https://token.ci.example", "build@ci.example", time.Hour, false, "does not chain to the trusted root"},
		{"expired certificate (no log entry proves when it signed)", ca, "https://token.ci.example", "build@ci.example", -time.Minute, false, "does not chain to the trusted root (or was not valid when it signed)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := signaturestest.NewKey(t)
			img := signaturestest.Push(t, host+"/team/keyless-"+strings.ToLower(strings.Fields(c.name)[1])+":v1")
			signaturestest.Sign(t, img, k, c.ca.Leaf(t, k, c.issuer, c.subject, c.validFor))
			r := v.Check(ctx, "c", img.String(), req)
			assert.Equal(t, c.verified, r.Verified, r.Message)
			if c.verified {
				assert.Equal(t, []string{"identity " + c.issuer + " " + c.subject}, r.Signers)
			} else {
				assert.Contains(t, r.Message, c.message)
			}
		})
	}

	// Without a trusted root no keyless signature verifies.
	k := signaturestest.NewKey(t)
	img := signaturestest.Push(t, host+"/team/noroot:v1")
	signaturestest.Sign(t, img, k, ca.Leaf(t, k, "https://token.ci.example", "build@ci.example", time.Hour))
	r := (&signatures.Verifier{}).Check(ctx, "c", img.String(), req)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "has no trusted root")
}

func TestResultsAreCachedByDigestAndRequirement(t *testing.T) {
	var requests atomic.Int64
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ci := signaturestest.NewKey(t)
	img := signaturestest.Push(t, u.Host+"/team/app:v1")
	signaturestest.Sign(t, img, ci, nil)
	now := time.Now()
	v := &signatures.Verifier{Now: func() time.Time { return now }}
	req := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{})

	requests.Store(0)
	require.True(t, v.Check(context.Background(), "c", img.String(), req).Verified)
	fetched := requests.Load()
	assert.Positive(t, fetched)
	assert.True(t, v.Check(context.Background(), "c", img.String(), req).Verified)
	assert.Equal(t, fetched, requests.Load(), "a digest verified for the requirement is not fetched again")

	other := keyed(t, map[string]*signaturestest.Key{"ci": ci, "second": signaturestest.NewKey(t)}, as.SignatureGate{})
	assert.True(t, v.Check(context.Background(), "c", img.String(), other).Verified)
	assert.Greater(t, requests.Load(), fetched, "another requirement is verified anew")

	fetched = requests.Load()
	now = now.Add(11 * time.Minute)
	assert.True(t, v.Check(context.Background(), "c", img.String(), req).Verified)
	assert.Greater(t, requests.Load(), fetched, "an expired result is verified anew")
}

func TestAnUnreachableRegistryIsNotVerifiedAndSaysSo(t *testing.T) {
	ci := signaturestest.NewKey(t)
	req := keyed(t, map[string]*signaturestest.Key{"ci": ci}, as.SignatureGate{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	r := (&signatures.Verifier{}).Check(context.Background(), "c", u.Host+"/team/app:v1", req)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "could not resolve the tag to a digest")
}

func TestCompileRefusesABadKey(t *testing.T) {
	_, err := signatures.Compile(&as.SignatureGate{Keys: []as.SignatureKey{{Name: "ci", PublicKey: "not a key"}}}, map[string]string{"ci": "not a key"})
	assert.EqualError(t, err, "key ci is not a PEM public key")
}

// A keyless certificate that has expired since (Fulcio's live minutes)
// verifies when a transparency log entry of the trusted root proves it
// signed while it was valid; an entry from a log the platform does not
// trust, an entry of another signature or one logged after the certificate
// expired does not.
func TestKeylessLoggedWhileValid(t *testing.T) {
	host := signaturestest.Registry(t)
	ctx := context.Background()
	ca, log, rogueLog := signaturestest.NewCA(t), signaturestest.NewLog(t), signaturestest.NewLog(t)
	tr, hash, err := signatures.LoadRoot(ca.TrustedRoot(t, log))
	require.NoError(t, err)
	v := &signatures.Verifier{Root: tr, RootHash: hash}
	req, err := signatures.Compile(&as.SignatureGate{Identities: []as.KeylessIdentity{{Issuer: "https://token.ci.example", Subject: "build@ci.example"}}}, nil)
	require.NoError(t, err)
	now := time.Now()

	for _, c := range []struct {
		name     string
		log      *signaturestest.Log
		at       time.Time
		verified bool
		message  string
	}{
		{"logged-while-valid", log, now.Add(-15 * time.Minute), true, ""},
		{"logged-after-expiry", log, now.Add(-5 * time.Minute), false, "was not valid when it signed"},
		{"untrusted-log", rogueLog, now.Add(-15 * time.Minute), false, "transparency log entry does not verify (its signed timestamp: rekor log public key not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := signaturestest.NewKey(t)
			img := signaturestest.Push(t, host+"/team/"+c.name+":v1")
			signaturestest.SignLogged(t, img, k, ca.Leaf(t, k, "https://token.ci.example", "build@ci.example", -10*time.Minute), c.log, c.at)
			r := v.Check(ctx, "c", img.String(), req)
			assert.Equal(t, c.verified, r.Verified, r.Message)
			if c.verified {
				assert.Equal(t, []string{"identity https://token.ci.example build@ci.example"}, r.Signers)
			} else {
				assert.Contains(t, r.Message, c.message)
			}
		})
	}

	// The entry of another signature (another image's, by the same key and certificate), copied beside this one.
	k := signaturestest.NewKey(t)
	cert := ca.Leaf(t, k, "https://token.ci.example", "build@ci.example", -10*time.Minute)
	other := signaturestest.Push(t, host+"/team/other:v1")
	payload := signaturestest.Payload(other)
	sig, err := k.SignMessage(bytes.NewReader(payload))
	require.NoError(t, err)
	img := signaturestest.Push(t, host+"/team/copied-entry:v1")
	signaturestest.SignWithBundle(t, img, k, cert, log.Bundle(t, payload, sig, cert, now.Add(-15*time.Minute)))
	r := v.Check(ctx, "c", img.String(), req)
	assert.False(t, r.Verified)
	assert.Contains(t, r.Message, "the entry is of another signature")
}

// A requirement written around the CRD's rule (no key, no identity) is
// refused, never satisfied by any image.
func TestCompileRefusesARequirementWithoutKeyOrIdentity(t *testing.T) {
	_, err := signatures.Compile(&as.SignatureGate{Attestations: []string{"https://slsa.dev/provenance/v1"}}, nil)
	require.ErrorContains(t, err, "no key and no identity")
}

// So are the CRD's other rules (its admission checks, repeated here).
func TestCompileRepeatsTheCRDsRules(t *testing.T) {
	id := as.KeylessIdentity{Issuer: "https://issuer.example.com", Subject: "ci@example.com"}
	for name, g := range map[string]*as.SignatureGate{
		"attestationsOnly without attestations": {AttestationsOnly: true, Identities: []as.KeylessIdentity{id}},
		"a key with neither source":             {Keys: []as.SignatureKey{{Name: "k"}}},
		"a key with both sources":               {Keys: []as.SignatureKey{{Name: "k", PublicKey: "x", ConfigMapKeyRef: &as.ConfigMapKey{Name: "c", Key: "k"}}}},
		"issuer and issuerRegExp":               {Identities: []as.KeylessIdentity{{Issuer: "a", IssuerRegExp: "b", Subject: "s"}}},
		"no subject":                            {Identities: []as.KeylessIdentity{{Issuer: "a"}}},
	} {
		_, err := signatures.Compile(g, map[string]string{"k": "x"})
		assert.Error(t, err, name)
	}
}
