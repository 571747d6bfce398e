package repositorycredentials

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// What the user must fix, read through the kernel's model: a refusal before
// the write took the credentials from Argo CD; a failed check leaves them
// (Keep); either is looked at again at the retry interval, never by backoff.
func TestFirstRefusal(t *testing.T) {
	before := kernel.Refuse(v1.RepositoryCredentialReasonSecretNotFound, "no secret")
	badURL := kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist")
	badCreds := kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials, "refused")
	cases := []struct {
		name     string
		refusal  *kernel.Refusal
		verdict  Verdict
		want     *kernel.Refusal
		wantKeep bool
	}{
		{name: "verified"},
		{name: "refused before the write", refusal: before, want: before},
		{name: "refusal wins over a verdict", refusal: before, verdict: Verdict{URL: badURL}, want: before},
		{name: "repository missing: kept", verdict: Verdict{URL: badURL}, want: badURL, wantKeep: true},
		{name: "credentials refused: kept", verdict: Verdict{Credential: badCreds}, want: badCreds, wantKeep: true},
		{name: "the URL first", verdict: Verdict{URL: badURL, Credential: badCreds}, want: badURL, wantKeep: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := firstRefusal(tc.refusal, tc.verdict)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want.Reason, got.Reason)
			assert.Equal(t, tc.want.Message, got.Message)
			assert.Equal(t, tc.wantKeep, got.Keep)
			res, err := kernel.Outcome(ctrl.Result{}, got.Retry(7*time.Second))
			require.NoError(t, err, "a refusal is not returned as an error (no backoff)")
			assert.Equal(t, 7*time.Second, res.RequeueAfter)
		})
	}
	assert.False(t, badURL.Keep, "the verifier's refusal is not changed")
}
