//go:build !unit

package promotionrun_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/reconcilers/signatures/signaturestest"
)

// platformCA and platformLog are the keyless CA and the transparency log the
// sidecar's --sigstore-trusted-root trusts.
var (
	platformCA  *signaturestest.CA
	platformLog *signaturestest.Log
)

// trustedRoot writes the platform's trusted root file for the suite.
func trustedRoot() (string, error) {
	ca, err := signaturestest.MakeCA()
	if err != nil {
		return "", err
	}
	if platformLog, err = signaturestest.MakeLog(); err != nil {
		return "", err
	}
	platformCA = ca
	b, err := ca.TrustedRootJSON(platformLog)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "trusted-root-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(b)
	return f.Name(), err
}

const slsaProvenance = "https://slsa.dev/provenance/v1"

// signedGate is dev's signature gate: key ci from a ConfigMap of the
// tenant, or the keyless CI identity; attestations when given.
func signedGate(t *testing.T, ns string, ci *signaturestest.Key, attestations ...string) *as.PromotionGates {
	t.Helper()
	require.NoError(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "signing-keys"},
		Data: map[string]string{"ci.pub": ci.PEM}}))
	return &as.PromotionGates{Signatures: &as.SignatureGate{
		Keys:         []as.SignatureKey{{Name: "ci", ConfigMapKeyRef: &as.ConfigMapKey{Name: "signing-keys", Key: "ci.pub"}}},
		Identities:   []as.KeylessIdentity{{Issuer: "https://token.ci.example", Subject: "build@ci.example"}},
		Attestations: attestations,
	}}
}

// The signature gate against images pushed to a real registry and signed
// the cosign way: what is not signed as dev requires holds the run with
// SignatureNotVerified naming the image and what was expected (nothing is
// bound); what is enters, and dev's history records what was verified.
func TestSignatureGate(t *testing.T) {
	host := signaturestest.Registry(t)
	ci, other := signaturestest.NewKey(t), signaturestest.NewKey(t)

	held := func(t *testing.T, image, msg string, attestations ...string) {
		t.Helper()
		ns := tenant(t)
		setGates(t, ns, "dev", signedGate(t, ns, ci, attestations...))
		snapshot(t, ns, "snap-signed", image)
		r := manual(ns, "gated", "appa", "snap-signed", "dev")
		require.NoError(t, k8s.Create(context.Background(), r))
		waitRun(t, r, "held by the signature gate", waitingFor(promotionrun.ReasonSignatureNotVerified, msg))
		warning(t, r, promotionrun.ReasonSignatureNotVerified)
		noBindingFor(t, ns, "dev")
	}

	t.Run("unsigned", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/unsigned:v1")
		held(t, img.String(), "a verified signature of image "+img.String()+" of component appa-fe for Environment dev: "+
			"expected a cosign signature by key ci or identity https://token.ci.example build@ci.example; found none")
	})
	t.Run("wrong key", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/wrong:v1")
		signaturestest.Sign(t, img, other, nil)
		held(t, img.String(), "found: a signature by none of the keys")
	})
	t.Run("tag moved to an unsigned digest", func(t *testing.T) {
		signed := signaturestest.Push(t, host+"/team/moved:latest")
		signaturestest.Sign(t, signed, ci, nil)
		moved := signaturestest.Push(t, host+"/team/moved:latest")
		held(t, host+"/team/moved:latest", "image "+host+"/team/moved:latest ("+moved.DigestStr()+") of component appa-fe")
	})
	t.Run("attestation of the wrong predicate type", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/att:v1")
		signaturestest.Sign(t, img, ci, nil)
		signaturestest.Attest(t, img, ci, "https://spdx.dev/Document", nil)
		held(t, img.String(), "expected an attestation of predicate type "+slsaProvenance+" signed by key ci", slsaProvenance)
	})
	t.Run("keyless identity of another subject", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/keyless-other:v1")
		k := signaturestest.NewKey(t)
		signaturestest.Sign(t, img, k, platformCA.Leaf(t, k, "https://token.ci.example", "mallory@evil.example", time.Hour))
		held(t, img.String(), "a keyless signature by identity https://token.ci.example mallory@evil.example")
	})

	entered := func(t *testing.T, image string, wantSigners, wantAttestations []string, attestations ...string) {
		t.Helper()
		ns := tenant(t)
		playArgo(t, ns)
		setGates(t, ns, "dev", signedGate(t, ns, ci, attestations...))
		snapshot(t, ns, "snap-signed", image)
		r := run(t, manual(ns, "gated", "appa", "snap-signed", "dev"), "promoted", succeeded)
		require.NotEmpty(t, r.Status.EnvironmentStatus)
		entries := getHistory(t, ns, "dev").Status.Entries
		require.Len(t, entries, 1)
		ref, err := name.ParseReference(image)
		require.NoError(t, err)
		require.Len(t, entries[0].Verifications, 1)
		v := entries[0].Verifications[0]
		assert.True(t, v.Verified, v.Message)
		assert.Equal(t, "appa-fe", v.Component)
		assert.Equal(t, image, v.Image)
		if d, ok := ref.(name.Digest); ok {
			assert.Equal(t, d.DigestStr(), v.Digest)
		}
		assert.Equal(t, wantSigners, v.Signers)
		assert.Equal(t, wantAttestations, v.Attestations)
	}

	t.Run("right key", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/good:v1")
		signaturestest.Sign(t, img, other, nil)
		signaturestest.Sign(t, img, ci, nil)
		entered(t, img.String(), []string{"key ci"}, nil)
	})
	t.Run("right key and provenance", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/provenance:v1")
		signaturestest.Sign(t, img, ci, nil)
		signaturestest.Attest(t, img, ci, slsaProvenance, nil)
		entered(t, img.String(), []string{"key ci"}, []string{slsaProvenance}, slsaProvenance)
	})
	t.Run("keyless identity against the platform's trusted root", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/keyless:v1")
		k := signaturestest.NewKey(t)
		signaturestest.Sign(t, img, k, platformCA.Leaf(t, k, "https://token.ci.example", "build@ci.example", time.Hour))
		entered(t, img.String(), []string{"identity https://token.ci.example build@ci.example"}, nil)
	})
	t.Run("keyless, the certificate expired since, logged while it was valid", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/keyless-logged:v1")
		k := signaturestest.NewKey(t)
		signaturestest.SignLogged(t, img, k, platformCA.Leaf(t, k, "https://token.ci.example", "build@ci.example", -10*time.Minute),
			platformLog, time.Now().Add(-15*time.Minute))
		entered(t, img.String(), []string{"identity https://token.ci.example build@ci.example"}, nil)
	})
	t.Run("keyless, the certificate expired, no log entry", func(t *testing.T) {
		img := signaturestest.Push(t, host+"/team/keyless-expired:v1")
		k := signaturestest.NewKey(t)
		signaturestest.Sign(t, img, k, platformCA.Leaf(t, k, "https://token.ci.example", "build@ci.example", -10*time.Minute))
		held(t, img.String(), "a keyless signature whose certificate does not chain to the trusted root (or was not valid when it signed)")
	})
}

// A requirement that cannot be used (its key's ConfigMap is missing) holds
// the run and says what to fix.
func TestSignatureGateWithAMissingKeyHolds(t *testing.T) {
	ns := tenant(t)
	setGates(t, ns, "dev", &as.PromotionGates{Signatures: &as.SignatureGate{
		Keys: []as.SignatureKey{{Name: "ci", ConfigMapKeyRef: &as.ConfigMapKey{Name: "nowhere", Key: "ci.pub"}}}}})
	snapshot(t, ns, "snap-signed", "registry.example.test/team/app:v1")
	r := manual(ns, "gated", "appa", "snap-signed", "dev")
	require.NoError(t, k8s.Create(context.Background(), r))
	waitRun(t, r, "held by the signature gate", waitingFor(promotionrun.ReasonSignatureNotVerified,
		"signatures of Snapshot snap-signed for Environment dev: key ci: ConfigMap nowhere not found (fix the Environment)"))
}

// A hostile tenant cannot make the signature gate reach what the egress
// policy refuses (the cloud's metadata address named as a registry), nor
// read registry credentials of another namespace (registrySecret is a name
// in the Environment's own namespace: a Secret of that name elsewhere is
// not used). Both hold the run, saying why.
func TestSignatureGateStaysInTheTenantsBounds(t *testing.T) {
	ci := signaturestest.NewKey(t)
	gate := func(secret string) *as.PromotionGates {
		return &as.PromotionGates{Signatures: &as.SignatureGate{Keys: []as.SignatureKey{{Name: "ci", PublicKey: ci.PEM}}, RegistrySecret: secret}}
	}
	t.Run("an internal address as the registry", func(t *testing.T) {
		ns := tenant(t)
		setGates(t, ns, "dev", gate(""))
		snapshot(t, ns, "snap-signed", "169.254.169.254/latest/meta-data:v1")
		r := manual(ns, "gated", "appa", "snap-signed", "dev")
		require.NoError(t, k8s.Create(context.Background(), r))
		waitRun(t, r, "held: the registry's address is refused", waitingFor(promotionrun.ReasonSignatureNotVerified,
			"could not resolve the tag to a digest: "))
		waitRun(t, r, "held, saying why", waitingFor(promotionrun.ReasonSignatureNotVerified,
			"169.254.169.254 resolves to a link-local address, which the platform does not let the GitOps Service connect to"))
	})
	t.Run("another namespace's registry credentials", func(t *testing.T) {
		other, ns := tenant(t), tenant(t)
		require.NoError(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "registry-creds"},
			Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"r.example.test":{"username":"u","password":"s3cret"}}}`)}}))
		setGates(t, ns, "dev", gate("registry-creds"))
		snapshot(t, ns, "snap-signed", "r.example.test/team/app:v1")
		r := manual(ns, "gated", "appa", "snap-signed", "dev")
		require.NoError(t, k8s.Create(context.Background(), r))
		got := waitRun(t, r, "held: no such Secret in its own namespace", waitingFor(promotionrun.ReasonSignatureNotVerified,
			`registry credentials Secret "registry-creds" in namespace "`+ns+`"`))
		for _, c := range got.Status.Conditions {
			assert.NotContains(t, c.Message, "s3cret")
		}
	})
}
