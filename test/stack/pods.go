package stack

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// PodRunLabel marks the Pods tests have RunPods report as running: label a
// Deployment's pod template with it (value "true") to make it available.
const PodRunLabel = "stack.gitops-service.io/run"

// WorkloadControllers are the kube-controller-manager controllers that turn
// Deployments into ReplicaSets and Pods; with RunPods, Deployments roll out.
var WorkloadControllers = []string{"deployment-controller", "replicaset-controller"}

// RunPods stands in for the kubelet, which the stack does not have: every Pod
// matching labelSelector (all Pods when empty; tests use PodRunLabel=true) is
// reported as a kubelet reports a started, ready container (phase Running,
// Ready), so its ReplicaSet counts it available, the Deployment rolls out, and
// Argo CD sees it Healthy with its images. Nothing is executed. Other Pods stay
// Pending. It runs until ctx is done.
func (k *Kube) RunPods(ctx context.Context, labelSelector string) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labelSelector
	}))
	informer := factory.Core().V1().Pods().Informer()
	start := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || running(pod) || !pod.DeletionTimestamp.IsZero() {
			return
		}
		if _, err := cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, runningStatus(pod), metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
			// A conflict or a deleted Pod: the informer brings the next version.
			fmt.Printf("stack: %s: marking pod %s/%s running: %v\n", k.Name, pod.Namespace, pod.Name, err)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    start,
		UpdateFunc: func(_, obj any) { start(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("%s: the pod informer did not sync", k.Name)
	}
	return nil
}

func running(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningStatus is what a kubelet reports once every container started and
// passed its (absent) readiness probe.
func runningStatus(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.HostIP, p.Status.PodIP = "127.0.0.1", "127.0.0.1"
	p.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: ImageID(c.Image), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return p
}

// ImageID is the image ID RunPods reports for image, as a kubelet reports
// what it pulled: the repository at a digest. An image that pins a digest
// runs it; a tag runs sha256 of the image's name (what the stack's pretend
// registry says the tag names).
func ImageID(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image
	}
	repo := image
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo = image[:i]
	}
	return fmt.Sprintf("%s@sha256:%x", repo, sha256.Sum256([]byte(image)))
}
