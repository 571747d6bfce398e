package promotionpreview

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestSpecProblemRepeatsTheOneOfRule(t *testing.T) {
	const msg = "exactly one of targetEnvironment and allEnvironments: true"
	assert.Empty(t, specProblem(as.PromotionPreviewSpec{TargetEnvironment: "prod"}))
	assert.Empty(t, specProblem(as.PromotionPreviewSpec{AllEnvironments: true}))
	assert.Equal(t, msg, specProblem(as.PromotionPreviewSpec{}))
	assert.Equal(t, msg, specProblem(as.PromotionPreviewSpec{TargetEnvironment: "prod", AllEnvironments: true}))
}

// TestSummarizeRelease: each Environment's result in the path's order, with
// its render hashes and its share of the status's diff; the release is
// clean only when every Environment is.
func TestSummarizeRelease(t *testing.T) {
	big := strings.Repeat("+ line of a diff\n", 400) // 6.8 KiB
	comp := func(hash, dryRunErr string) []ComponentResult {
		return []ComponentResult{{Name: "web", ArgoApplication: "a", RenderHash: hash,
			Objects: []ObjectResult{{Kind: "apps/Deployment", Namespace: "t", Name: "web", Change: Changed, Diff: big, DryRunErr: dryRunErr}}}}
	}
	results := []EnvironmentResult{
		{Name: "dev", Components: comp("sha256:d", "")},
		{Name: "staging", Error: "the cluster credentials of Environment \"staging\" are not ready"},
		{Name: "prod", Components: comp("sha256:p", "admission webhook denied")},
	}
	envs, clean := SummarizeRelease(results, 3*4096)
	assert.False(t, clean)
	require.Len(t, envs, 3)
	assert.Equal(t, []string{"dev", "staging", "prod"}, []string{envs[0].Name, envs[1].Name, envs[2].Name})
	assert.True(t, envs[0].Clean)
	assert.Equal(t, "sha256:d", envs[0].Components[0].RenderHash)
	assert.Equal(t, 1, envs[0].Components[0].Changed)
	assert.LessOrEqual(t, len(envs[0].Diff), 4096)
	assert.True(t, envs[0].DiffTruncated)
	assert.False(t, envs[1].Clean)
	assert.Contains(t, envs[1].Error, "not ready")
	assert.Empty(t, envs[1].Components)
	assert.False(t, envs[2].Clean)
	assert.Equal(t, 1, envs[2].Components[0].Errors)
	assert.Equal(t, "sha256:p", envs[2].Components[0].RenderHash)

	envs, clean = SummarizeRelease(results[:1], MaxStatusDiff)
	assert.True(t, clean)
	assert.False(t, envs[0].DiffTruncated)
	_, clean = SummarizeRelease(nil, MaxStatusDiff)
	assert.False(t, clean, "nothing previewed is not clean")

	full := FullReleaseDiff(results)
	assert.Contains(t, full, "### Environment dev\n")
	assert.Contains(t, full, "### Environment staging\n# not previewed: the cluster credentials")
	assert.Equal(t, 2, strings.Count(full, big), "the whole diff of each previewed Environment")
}
