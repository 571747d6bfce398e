package promotionrun

import (
	"crypto/sha256"
	"fmt"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func env(name, parent string, strategy as.DeploymentStrategyType) as.Environment {
	return as.Environment{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: as.EnvironmentSpec{ParentEnvironment: parent, DeploymentStrategy: strategy}}
}

func TestNextLevelWalksBreadthFirstAndStopsAtManual(t *testing.T) {
	auto, manual := as.DeploymentStrategyAppStudioAutomated, as.DeploymentStrategyManual
	envs := []as.Environment{
		env("dev", "", auto),
		env("staging-b", "dev", auto),
		env("staging-a", "dev", auto),
		env("qa", "dev", manual),
		env("prod", "staging-a", manual),
		env("perf", "staging-b", auto),
		env("unrelated", "", auto),
	}
	next, stopped := nextLevel(envs, []string{"dev"}, []string{"dev"})
	assert.Equal(t, []string{"staging-a", "staging-b"}, next, "children of the level, by name")
	assert.Equal(t, []string{"qa"}, stopped, "Manual children are not promoted to")

	next, stopped = nextLevel(envs, []string{"staging-a", "staging-b"}, []string{"dev", "staging-a", "staging-b"})
	assert.Equal(t, []string{"perf"}, next)
	assert.Equal(t, []string{"prod"}, stopped)

	next, stopped = nextLevel(envs, []string{"perf"}, []string{"dev", "staging-a", "staging-b", "perf"})
	assert.Empty(t, next)
	assert.Empty(t, stopped)
}

func TestNextLevelNeverRevisitsACycle(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	envs := []as.Environment{env("a", "b", auto), env("b", "a", auto)}
	next, _ := nextLevel(envs, []string{"a"}, []string{"a"})
	assert.Equal(t, []string{"b"}, next)
	next, _ = nextLevel(envs, []string{"b"}, []string{"a", "b"})
	assert.Empty(t, next, "a was promoted to already")
}

func app(component, kustomizeImage string, sync argov1alpha1.SyncStatusCode, h health.HealthStatusCode, live ...string) argov1alpha1.Application {
	a := argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{as.LabelComponent: component}},
		Spec: argov1alpha1.ApplicationSpec{Source: &argov1alpha1.ApplicationSource{
			Kustomize: &argov1alpha1.ApplicationSourceKustomize{Images: argov1alpha1.KustomizeImages{argov1alpha1.KustomizeImage(kustomizeImage)}}}}}
	a.Status.Sync.Status = sync
	a.Status.Health.Status = h
	a.Status.Summary.Images = live
	return a
}

func TestVerdictNeedsSyncedHealthyAndTheSnapshotsImages(t *testing.T) {
	snap := &as.Snapshot{Spec: as.SnapshotSpec{Components: []as.SnapshotComponent{
		{Name: "fe", ContainerImage: "quay.io/x/fe:v2"}, {Name: "be", ContainerImage: "quay.io/x/be:v2"}}}}
	synced, outOfSync := argov1alpha1.SyncStatusCodeSynced, argov1alpha1.SyncStatusCodeOutOfSync
	healthy := health.HealthStatusHealthy
	beDone := app("be", "quay.io/x/be=quay.io/x/be:v2", synced, healthy, "quay.io/x/be:v2")
	cases := map[string]struct {
		fe   []argov1alpha1.Application
		ok   bool
		want string
	}{
		"all deployed":   {[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v2", synced, healthy, "quay.io/x/fe:v2", "sidecar:1")}, true, msgSuccess},
		"no application": {nil, false, "1 of 2 components deployed; waiting for fe: no GitOpsDeployment yet"},
		"still the previous snapshot (OutOfSync counted as done by the original)": {
			[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v1", synced, healthy, "quay.io/x/fe:v1")}, false,
			"fe: not yet generated for quay.io/x/fe:v2"},
		"out of sync":   {[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v2", outOfSync, healthy, "quay.io/x/fe:v1")}, false, "fe: OutOfSync"},
		"progressing":   {[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v2", synced, health.HealthStatusProgressing)}, false, "fe: Progressing"},
		"no status yet": {[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v2", "", "")}, false, "fe: Unknown"},
		"healthy but another image runs": {[]argov1alpha1.Application{app("fe", "quay.io/x/fe=quay.io/x/fe:v2", synced, healthy, "quay.io/x/fe:v1")}, false,
			"fe: quay.io/x/fe:v2 not running yet"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ok, msg := verdict(snap, append(tc.fe, beDone))
			assert.Equal(t, tc.ok, ok)
			assert.Contains(t, msg, tc.want)
		})
	}
}

// testDigest is a digest a registry could give image (sha256 of its name).
func testDigest(image string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(image)))
}
