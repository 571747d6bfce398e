package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func deploymentOf(name string, replicas int32, podLabels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "quay.io/example/" + name + ":v1"}}},
			},
		},
	}
}

// TestRunPods: with the workload controllers and RunPods, a Deployment whose
// pods carry PodRunLabel rolls out; one without it does not.
func TestRunPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := startTestKube(ctx, t, KubeOptions{Name: "pods-test", ControllerManager: true,
		Controllers: append(append([]string{}, DefaultControllers...), WorkloadControllers...)})
	if err := k.RunPods(ctx, PodRunLabel+"=true"); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(k.Config)
	deployments := cs.AppsV1().Deployments("default")
	if _, err := deployments.Create(ctx, deploymentOf("runs", 2, map[string]string{"app": "runs", PodRunLabel: "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Create(ctx, deploymentOf("pending", 1, map[string]string{"app": "pending"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := deployments.Get(ctx, "runs", metav1.GetOptions{})
		if err == nil && d.Status.AvailableReplicas == 2 && d.Status.UpdatedReplicas == 2 && d.Status.ObservedGeneration == d.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the labelled Deployment never became available: %+v (err %v)", d.Status, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=pending"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Status.Phase == corev1.PodRunning {
		t.Fatalf("want one Pending pod for the unlabelled Deployment, got %+v", pods.Items)
	}
	pending, err := deployments.Get(ctx, "pending", metav1.GetOptions{})
	if err != nil || pending.Status.AvailableReplicas != 0 {
		t.Fatalf("the unlabelled Deployment became available: %+v (err %v)", pending.Status, err)
	}
}

// TestImageID: RunPods reports a digest, as a kubelet does: the one an image
// pins, or one per tag.
func TestImageID(t *testing.T) {
	pinned := "quay.io/x/fe@sha256:" + strings.Repeat("a", 64)
	if got := ImageID(pinned); got != pinned {
		t.Errorf("ImageID(%s) = %s", pinned, got)
	}
	for _, image := range []string{"quay.io/x/fe:v1", "localhost:5000/x/fe:v1", "fe"} {
		got := ImageID(image)
		repo := strings.TrimSuffix(image, ":v1")
		if !strings.HasPrefix(got, repo+"@sha256:") || len(got) != len(repo)+len("@sha256:")+64 {
			t.Errorf("ImageID(%s) = %s, want %s@sha256:<64 hex>", image, got, repo)
		}
	}
	if ImageID("quay.io/x/fe:v1") == ImageID("quay.io/x/fe:v2") {
		t.Error("two tags, one digest")
	}
}
