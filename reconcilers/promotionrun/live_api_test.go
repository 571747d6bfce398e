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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
)

// The suite has no kubelet and no workload controllers: playArgo makes each
// generated Application's workload itself (a Deployment, its ReplicaSet and
// one Pod, as the controllers would) and writes the Pod's status as a kubelet
// reports a started container: the image ID it pulled, image@<digest>, the
// digest being what registry says the image's tag names now.

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

// runWorkload makes name's Deployment, ReplicaSet and Pod in ns run image, and
// reports the Pod's container running the digest the image names now; a Pod
// already running another image or digest is restarted (its status rewritten).
// It returns the Deployment as Argo CD lists it among an Application's resources.
func runWorkload(ctx context.Context, ns, name, image string) (argov1alpha1.ResourceStatus, error) {
	res := argov1alpha1.ResourceStatus{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name, Status: argov1alpha1.SyncStatusCodeSynced}
	labels := map[string]string{"app": name}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "fe", Image: image}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	if err := k8s.Create(ctx, deploy); err != nil && !apierrors.IsAlreadyExists(err) {
		return res, err
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
		return res, err
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: deploy.Spec.Selector, Template: template}}
	if err := k8s.Create(ctx, rs); err != nil && !apierrors.IsAlreadyExists(err) {
		return res, err
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
		return res, err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1-a", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: template.Spec}
	if err := k8s.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return res, err
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return res, err
	}
	if pod.Spec.Containers[0].Image != image {
		// A new rollout: the container's image changes (a Pod's image is mutable).
		pod.Spec.Containers[0].Image = image
		if err := k8s.Update(ctx, pod); err != nil {
			return res, err
		}
	}
	imageID := repository(image) + "@" + digestOf(image)
	if s := pod.Status.ContainerStatuses; len(s) == 1 && s[0].Image == image && s[0].ImageID == imageID {
		return res, nil
	}
	// What a kubelet reports once the container (re)started on what it pulled.
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "fe", Image: image, ImageID: imageID, Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	return res, k8s.Status().Update(ctx, pod)
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
	dev := &as.Environment{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, dev))
	dev.Spec.Gates = &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Minute}}
	dev.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
	require.NoError(t, k8s.Update(ctx, dev))
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
