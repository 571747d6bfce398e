package promotionrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestSignatureGate(t *testing.T) {
	required := gated("prod", &as.PromotionGates{Signatures: &as.SignatureGate{Keys: []as.SignatureKey{{Name: "ci", PublicKey: "pem"}}}})
	ok := as.ImageVerification{Component: "web", Image: "r.example/web@sha256:aa", Digest: "sha256:aa", Verified: true, Signers: []string{"key ci"}}
	bad := as.ImageVerification{Component: "api", Image: "r.example/api:v2", Digest: "sha256:bb", Message: "expected a cosign signature by key ci; found none"}
	base := gateInput{Snapshot: "snap", Now: time.Now()}

	in := base
	in.Env = gated("dev", nil)
	assert.Nil(t, gate(in), "no requirement, no gate")

	in = base
	in.Env, in.Signatures = required, []as.ImageVerification{ok}
	assert.Nil(t, gate(in), "every image verified")

	in.Signatures = []as.ImageVerification{ok, bad, bad}
	w := gate(in)
	require.NotNil(t, w)
	assert.Equal(t, as.WaitingReasonSignatureNotVerified, w.Reason)
	assert.Equal(t, "a verified signature of image r.example/api:v2 (sha256:bb) of component api for Environment prod: expected a cosign signature by key ci; found none (and 1 more images)", w.For)

	in.Signatures = nil
	w = gate(in)
	require.NotNil(t, w, "a requirement not checked holds")
	assert.Contains(t, w.For, "to be verified")

	in.Signatures, in.SignatureProblem = []as.ImageVerification{ok}, "key ci: ConfigMap keys not found"
	w = gate(in)
	require.NotNil(t, w, "a requirement that cannot be used holds")
	assert.Equal(t, "signatures of Snapshot snap for Environment prod: key ci: ConfigMap keys not found (fix the Environment)", w.For)

	in.SignatureProblem, in.Signatures, in.Rollback = "", []as.ImageVerification{bad}, true
	assert.Nil(t, gate(in), "a rollback returns to a Snapshot verified before")
}
