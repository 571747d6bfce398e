package promotionrun

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func TestDigestOf(t *testing.T) {
	d := testDigest("x")
	for ref, want := range map[string]string{
		"quay.io/x/fe@" + d:                   d,
		"docker-pullable://quay.io/x/fe@" + d: d,
		"quay.io/x/fe:v1":                     "",
		"localhost:5000/x/fe:v1":              "",
		"sha256:abc":                          "", // an image config ID, not a repository digest
		"registry.local:5000/x/fe:v1@" + d:    d,
		"quay.io/x/fe@notadigest":             "",
	} {
		assert.Equal(t, want, digestOf(ref), ref)
	}
}

func pod(name, image, imageID string, running bool) livePod {
	return livePod{Name: name, Containers: []liveContainer{{Name: "fe", Image: image, ImageID: imageID, Running: running},
		{Name: "proxy", Image: "envoy:1", ImageID: "envoy@" + testDigest("envoy"), Running: true}}}
}

func TestCheckDigest(t *testing.T) {
	tag, d1, d2 := "quay.io/x/fe:v1", testDigest("one"), testDigest("two")
	pinnedImage := "quay.io/x/fe@" + d1
	cases := map[string]struct {
		image, want string
		pods        []livePod
		digest      string
		wait        string
		drift       bool
	}{
		"a tag, all agree: the digest to pin": {image: tag, pods: []livePod{pod("a", tag, "quay.io/x/fe@"+d1, true), pod("b", tag, "docker-pullable://quay.io/x/fe@"+d1, true)}, digest: d1},
		"a tag, they disagree (a rollout on a moved tag)": {image: tag, pods: []livePod{pod("a", tag, "quay.io/x/fe@"+d1, true), pod("b", tag, "quay.io/x/fe@"+d2, true)},
			wait: "disagree on its digest (" + min(d1, d2) + ", " + max(d1, d2) + ")"},
		"nothing runs yet":                {image: tag, pods: []livePod{pod("a", tag, "", false)}, wait: "fe: no running container of quay.io/x/fe:v1 yet"},
		"only the previous image runs":    {image: tag, pods: []livePod{pod("a", "quay.io/x/fe:v0", "quay.io/x/fe@"+d2, true)}, wait: "no running container"},
		"no digest reported":              {image: tag, pods: []livePod{pod("a", tag, "quay.io/x/fe:v1", true)}, wait: "container fe of Pod a reports no image digest"},
		"a Pod going away does not count": {image: tag, pods: []livePod{{Name: "old", Deleting: true, Containers: []liveContainer{{Name: "fe", Image: tag, ImageID: "x@" + d2, Running: true}}}, pod("a", tag, "x@"+d1, true)}, digest: d1},
		"pinned, still so":                {image: tag, want: d1, pods: []livePod{pod("a", tag, "x@"+d1, true)}, digest: d1},
		"pinned, a Pod restarted on a moved tag": {image: tag, want: d1, pods: []livePod{pod("a", tag, "x@"+d1, true), pod("b", tag, "x@"+d2, true)}, drift: true,
			wait: "component fe runs quay.io/x/fe:v1 with digest " + d2 + " (container fe of Pod b), not the expected " + d1},
		"the Snapshot pins the digest": {image: pinnedImage, want: d1, pods: []livePod{pod("a", pinnedImage, "quay.io/x/fe@"+d1, true)}, digest: d1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkDigest("fe", tc.image, tc.want, tc.pods)
			assert.Equal(t, tc.digest, got.Digest)
			assert.Equal(t, tc.drift, got.Drift)
			if tc.wait == "" {
				assert.Empty(t, got.Wait)
			} else {
				assert.Contains(t, got.Wait, tc.wait)
			}
		})
	}
}

func TestComparedSince(t *testing.T) {
	start := time.Date(2026, 3, 4, 10, 0, 0, 500_000_000, time.UTC)
	compared := func(at time.Time, image string) *argov1alpha1.Application {
		a := app("fe", "quay.io/x/fe="+image, argov1alpha1.SyncStatusCodeSynced, health.HealthStatusHealthy, image)
		a.Status.ReconciledAt = &metav1.Time{Time: at.Truncate(time.Second)}
		a.Status.Sync.ComparedTo.Source = *a.Spec.Source.DeepCopy()
		return &a
	}
	assert.True(t, comparedSince(compared(start.Add(time.Second), "quay.io/x/fe:v2"), "quay.io/x/fe:v2", start))
	assert.True(t, comparedSince(compared(start, "quay.io/x/fe:v2"), "quay.io/x/fe:v2", start), "in the step's second (second resolution)")
	assert.False(t, comparedSince(compared(start.Add(-time.Second), "quay.io/x/fe:v2"), "quay.io/x/fe:v2", start), "a status older than the step")
	assert.False(t, comparedSince(compared(start.Add(time.Second), "quay.io/x/fe:v1"), "quay.io/x/fe:v2", start), "compared with the previous spec")
	never := compared(start, "quay.io/x/fe:v2")
	never.Status.ReconciledAt = nil
	assert.False(t, comparedSince(never, "quay.io/x/fe:v2", start))
}

// TestVerifyLiveNeverOnAStaleStatus: Synced, Healthy and the image in Argo
// CD's summary are not enough when Argo CD last compared before the step
// started; once it compared since, the digest running is pinned once.
func TestVerifyLiveNeverOnAStaleStatus(t *testing.T) {
	img := "quay.io/x/fe:v2"
	start := metav1.NewTime(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	snap := &as.Snapshot{Spec: as.SnapshotSpec{Components: []as.SnapshotComponent{{Name: "fe", ContainerImage: img}}}}
	run := &as.PromotionRun{Status: as.PromotionRunStatus{EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
		{Step: 1, EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusInProgress, StartTime: &start}}}}
	a := app("fe", "quay.io/x/fe="+img, argov1alpha1.SyncStatusCodeSynced, health.HealthStatusHealthy, img)
	a.Name = "dev-fe"
	a.Status.Sync.ComparedTo.Source = *a.Spec.Source.DeepCopy()
	a.Status.ReconciledAt = &metav1.Time{Time: start.Add(-time.Minute)}
	w := &world{Now: metav1.NewTime(start.Add(time.Minute)), Live: map[string]*liveWorkloads{
		"dev-fe": {Pods: []livePod{pod("a", img, "quay.io/x/fe@"+testDigest(img), true)}}}}

	ok, msg, drift := verifyLive(w, run, "dev", snap, []argov1alpha1.Application{a})
	assert.False(t, ok)
	assert.Nil(t, drift)
	assert.Contains(t, msg, "Argo CD has not compared it with quay.io/x/fe:v2 since the step started")
	assert.Empty(t, run.Status.EnvironmentStatus[0].Digests, "nothing pinned on a stale status")

	a.Status.ReconciledAt = &metav1.Time{Time: start.Add(30 * time.Second)}
	ok, msg, drift = verifyLive(w, run, "dev", snap, []argov1alpha1.Application{a})
	require.True(t, ok, msg)
	assert.Nil(t, drift)
	require.Equal(t, []as.RunningDigest{{Component: "fe", Image: img, Digest: testDigest(img), ObservedTime: w.Now}}, run.Status.EnvironmentStatus[0].Digests)

	syncingApp := a.DeepCopy()
	syncingApp.Status.OperationState = &argov1alpha1.OperationState{Phase: synccommon.OperationRunning}
	ok, msg, _ = verifyLive(w, run, "dev", snap, []argov1alpha1.Application{*syncingApp})
	assert.False(t, ok, "not while Argo CD syncs")
	assert.Contains(t, msg, "fe: Argo CD's sync in progress")

	w.Now = metav1.NewTime(start.Add(2 * time.Minute))
	w.Live["dev-fe"] = &liveWorkloads{Pods: []livePod{pod("b", img, "quay.io/x/fe@"+testDigest("moved"), true)}}
	ok, _, drift = verifyLive(w, run, "dev", snap, []argov1alpha1.Application{a})
	assert.False(t, ok)
	require.NotNil(t, drift, "another digest after the pin is drift")
	assert.Equal(t, ReasonImageDigestDrift, drift.Reason)
	assert.Equal(t, start.Add(time.Minute), run.Status.EnvironmentStatus[0].Digests[0].ObservedTime.Time, "pinned once")

	w.Live["dev-fe"] = &liveWorkloads{Problem: "listing the Pods of Deployment t/fe on its cluster: forbidden"}
	ok, msg, drift = verifyLive(w, run, "dev", snap, []argov1alpha1.Application{a})
	assert.False(t, ok)
	assert.Nil(t, drift)
	assert.Contains(t, msg, "fe: listing the Pods of Deployment t/fe on its cluster: forbidden")
}

func TestSoaking(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	v := metav1.NewTime(t0)
	run := &as.PromotionRun{Status: as.PromotionRunStatus{EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
		{EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, VerifiedTime: &v},
		{EnvironmentName: "qa", Status: as.PromotionRunEnvironmentStatusSuccess, VerifiedTime: &v},
		{EnvironmentName: "staging", Status: as.PromotionRunEnvironmentStatusInProgress}}}}
	dev := withGates(env("dev", "", ""), &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}})
	envs := []as.Environment{dev, env("qa", "", ""), withGates(env("staging", "dev", ""), &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}})}
	assert.Equal(t, []string{"dev"}, soaking(run, envs, t0.Add(59*time.Minute)), "qa has no soak time; staging is not verified")
	assert.Empty(t, soaking(run, envs, t0.Add(time.Hour)), "the soak ended")
}

// TestLiveEnvironments: the level in progress is read whole (a verified
// Environment of it is verified again until the level is done), and so are
// the soaking steps; nothing else.
func TestLiveEnvironments(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	first, second := metav1.NewTime(t0), metav1.NewTime(t0.Add(time.Hour))
	run := &as.PromotionRun{Status: as.PromotionRunStatus{EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
		{EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: &first, VerifiedTime: &first},
		{EnvironmentName: "qa", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: &first, VerifiedTime: &first},
		{EnvironmentName: "staging-a", Status: as.PromotionRunEnvironmentStatusSuccess, StartTime: &second, VerifiedTime: &second},
		{EnvironmentName: "staging-b", Status: as.PromotionRunEnvironmentStatusInProgress, StartTime: &second}}}}
	dev := withGates(env("dev", "", ""), &as.PromotionGates{SoakTime: &metav1.Duration{Duration: 2 * time.Hour}})
	envs := []as.Environment{dev, env("qa", "", ""), env("staging-a", "dev", ""), env("staging-b", "dev", "")}
	assert.Equal(t, []string{"staging-a", "staging-b", "dev"}, liveEnvironments(run, envs, t0.Add(90*time.Minute)))
	assert.Equal(t, []string{"staging-a", "staging-b"}, liveEnvironments(run, envs, t0.Add(3*time.Hour)))
}
