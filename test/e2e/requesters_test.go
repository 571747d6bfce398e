package e2e

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gitops-service/gitops-service/test/stack"
)

var requesterPolicyOnce sync.Once

// applyRequesterPolicy applies the PromotionRun requester admission policy as
// shipped (once): from then on every run of the suite that names a requester
// is checked, the sidecar's (its ServiceAccount, for the panel) included.
func applyRequesterPolicy(t *testing.T) {
	t.Helper()
	requesterPolicyOnce.Do(func() {
		root, err := stack.RepoRoot()
		require.NoError(t, err)
		out, err := kubectl(t, "apply", "-f", filepath.Join(root, "manifests", "install", "promotion-requesters.yaml"))
		require.NoError(t, err, out)
	})
}
