package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// TestPreviewedEnvironments: a release preview covers the namespace's path,
// roots first and each parent before its children; a single preview its
// target alone.
func TestPreviewedEnvironments(t *testing.T) {
	path := envs([2]string{"prod", "staging"}, [2]string{"dev", ""}, [2]string{"staging", "dev"}, [2]string{"qa", "dev"},
		[2]string{"sandbox", ""}, [2]string{"loop-a", "loop-b"}, [2]string{"loop-b", "loop-a"})
	all := as.PromotionPreviewSpec{AllEnvironments: true}
	got := all.Previewed(path)
	assert.ElementsMatch(t, []string{"dev", "staging", "qa", "prod", "sandbox", "loop-a", "loop-b"}, got, "every Environment once, a cycle's too")
	pos := map[string]int{}
	for i, n := range got {
		pos[n] = i
	}
	assert.Less(t, pos["dev"], pos["staging"])
	assert.Less(t, pos["dev"], pos["qa"])
	assert.Less(t, pos["staging"], pos["prod"])
	assert.Equal(t, []string{"prod"}, as.PromotionPreviewSpec{TargetEnvironment: "prod"}.Previewed(path))
	assert.Empty(t, all.Previewed(nil))
}
