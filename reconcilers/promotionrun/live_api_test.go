//go:build !unit

package promotionrun_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

// The suite has no kubelet and no workload controllers: playArgo makes each
// generated Application's workload itself (stack.RunWorkload: a Deployment,
// its ReplicaSet and one Pod, as the controllers would) and writes the Pod's
// status as a kubelet reports a started container: the image ID it pulled,
// image@<digest>, the digest being what registry says the image's tag names now.

// registry is the digest each tag names (a digest of the tag's name unless moved).
var registry = struct {
	sync.Mutex
	moved map[string]string
}{moved: map[string]string{}}

func digestOf(image string) string {
	registry.Lock()
	defer registry.Unlock()
	if d, ok := registry.moved[image]; ok {
		return d
	}
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i+1:]
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(image)))
}

// moveTag points the tag image at another digest, as a push of the same tag does.
func moveTag(image string) string {
	d := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(image+" moved")))
	registry.Lock()
	defer registry.Unlock()
	registry.moved[image] = d
	return d
}

func repository(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

// runWorkload runs image in ns as workload name (stack.RunWorkload), its
// container on the digest the image names now.
func runWorkload(ctx context.Context, ns, name, image string) (argov1alpha1.ResourceStatus, error) {
	return stack.RunWorkload(ctx, k8s, ns, name, image, repository(image)+"@"+digestOf(image))
}

// TestTagMovedUnderTheSameNameIsCaught: dev soaks for a minute and asks for
// an automatic rollback. An automated promotion of a Snapshot naming a tag
// is verified with the digest its Pod runs pinned in the step; then the tag
// moves to another digest and the Pod restarts on it (written as a kubelet
// would report it): the step fails during its soak with a Warning naming
// the component, the expected and the observed digest, and the rollback
// goes back to the Snapshot verified there before.
func TestTagMovedUnderTheSameNameIsCaught(t *testing.T) {
	ctx := context.Background()
	ns := tenant(t)
	playArgo(t, ns)
	soakAndRollBackDev(t, ns)
	// What dev goes back to.
	run(t, manual(ns, "first", "appa", "snap-a", "dev"), "verified", succeeded)
	image := "quay.io/x/fe:moving-" + ns
	snapshot(t, ns, "snap-moving", image)

	promo := automated(ns, "moving", "snap-moving")
	require.NoError(t, k8s.Create(ctx, promo))
	verified := waitRun(t, promo, "verified in dev, soaking", func(r *as.PromotionRun) bool {
		return r.Status.State == as.PromotionRunStateActive && len(r.Status.EnvironmentStatus) == 1 &&
			r.Status.EnvironmentStatus[0].Status == as.PromotionRunEnvironmentStatusSuccess
	})
	pinned := verified.Status.EnvironmentStatus[0].Digests
	require.Len(t, pinned, 1)
	assert.Equal(t, "appa-fe", pinned[0].Component)
	assert.Equal(t, image, pinned[0].Image)
	want := digestOf(image)
	assert.Equal(t, want, pinned[0].Digest, "the digest the Pod runs is pinned")
	assert.False(t, pinned[0].ObservedTime.Before(verified.Status.EnvironmentStatus[0].StartTime), "observed after the step started")

	moved := moveTag(image)
	failed := waitRun(t, promo, "failed on the moved tag", failedWith("component appa-fe runs "+image+" with digest "+moved))
	assert.Equal(t, as.PromotionRunEnvironmentStatusFailure, failed.Status.EnvironmentStatus[0].Status)
	assert.Contains(t, failed.Status.EnvironmentStatus[0].DisplayStatus, "not the expected "+want)
	warning(t, failed, promotionrun.ReasonImageDigestDrift)

	rb := waitRun(t, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: as.NewAutomaticRollback(failed, "dev").Name}}, "rolled back", succeeded)
	assert.Equal(t, "snap-a", rb.Status.Rollback.Snapshot)
	h := getHistory(t, ns, "dev")
	var results []string
	for _, e := range h.Status.Entries {
		results = append(results, e.PromotionRun+"="+string(e.Result))
	}
	assert.Contains(t, results, "moving="+string(as.PromotionRunCompleteResultFailure), "the verified step's entry says it failed in its soak")
}

// A run that completes while the step it verified soaks (a manual one into
// an Environment with a soak time) watches the digests through the soak
// too: a tag moved under the same name fails the step and the run, and the
// Environment rolls back.
func TestTagMovedAfterTheRunCompletedIsCaughtDuringTheSoak(t *testing.T) {
	ns := tenant(t)
	playArgo(t, ns)
	soakAndRollBackDev(t, ns)
	run(t, manual(ns, "first", "appa", "snap-a", "dev"), "verified", succeeded)
	image := "quay.io/x/fe:moving-" + ns
	snapshot(t, ns, "snap-moving", image)

	promo := manual(ns, "moving", "appa", "snap-moving", "dev")
	done := run(t, promo, "completed while dev soaks", succeeded)
	require.Len(t, done.Status.EnvironmentStatus, 1)
	pinned := done.Status.EnvironmentStatus[0].Digests
	require.Len(t, pinned, 1)
	want := digestOf(image)
	assert.Equal(t, want, pinned[0].Digest)

	moved := moveTag(image)
	failed := waitRun(t, promo, "failed on the moved tag in the soak", failedWith("component appa-fe runs "+image+" with digest "+moved))
	assert.Equal(t, as.PromotionRunStateCompleted, failed.Status.State)
	assert.Equal(t, as.PromotionRunCompleteResultFailure, failed.Status.CompletionResult)
	assert.Equal(t, as.PromotionRunEnvironmentStatusFailure, failed.Status.EnvironmentStatus[0].Status)
	assert.Contains(t, failed.Status.EnvironmentStatus[0].DisplayStatus, "not the expected "+want)
	warning(t, failed, promotionrun.ReasonImageDigestDrift)

	rb := waitRun(t, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: as.NewAutomaticRollback(failed, "dev").Name}}, "rolled back", succeeded)
	assert.Equal(t, "snap-a", rb.Status.Rollback.Snapshot)
	var results []string
	for _, e := range getHistory(t, ns, "dev").Status.Entries {
		results = append(results, e.PromotionRun+"="+string(e.Result))
	}
	assert.Contains(t, results, "moving="+string(as.PromotionRunCompleteResultFailure), "the entry of the completed run says it failed in its soak")
}

// soakAndRollBackDev gives dev a minute's soak time and automatic rollback
// (the Environment reconciler writes dev too: retried on conflict).
func soakAndRollBackDev(t *testing.T, ns string) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dev := &as.Environment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dev"}, dev); err != nil {
			return err
		}
		dev.Spec.Gates = &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Minute}}
		dev.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
		return k8s.Update(context.Background(), dev)
	}))
}
