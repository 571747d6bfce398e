package stack

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// RunWorkload stands in for the workload controllers and the kubelet of a
// suite that has neither, for one workload in ns: it makes Deployment name,
// its ReplicaSet and one Pod running image, and reports the Pod's container
// started on imageID (as a kubelet reports what it pulled). A Pod already
// running another image or image ID is changed to this one (a rollout or a
// restart). It returns the Deployment as Argo CD lists it among an
// Application's resources (status.resources).
func RunWorkload(ctx context.Context, c client.Client, ns, name, image, imageID string) (argov1alpha1.ResourceStatus, error) {
	res := argov1alpha1.ResourceStatus{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name, Status: argov1alpha1.SyncStatusCodeSynced}
	app := name
	if len(app) > 63 {
		app = fmt.Sprintf("%x", sha256.Sum256([]byte(name)))[:32] // a label value's limit
	}
	labels := map[string]string{"app": app}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	if err := getOrCreate(ctx, c, deploy); err != nil {
		return res, err
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Selector: deploy.Spec.Selector, Template: template}}
	if err := getOrCreate(ctx, c, rs); err != nil {
		return res, err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1-a", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec: template.Spec}
	if err := getOrCreate(ctx, c, pod); err != nil {
		return res, err
	}
	if pod.Spec.Containers[0].Image != image {
		// A Pod's container image is mutable: the rollout in one write.
		pod.Spec.Containers[0].Image = image
		if err := c.Update(ctx, pod); err != nil {
			return res, err
		}
	}
	if s := pod.Status.ContainerStatuses; len(s) == 1 && s[0].Image == image && s[0].ImageID == imageID && running(pod) {
		return res, nil
	}
	p := runningStatus(pod)
	p.Status.ContainerStatuses[0].ImageID = imageID
	return res, c.Status().Update(ctx, p)
}

// getOrCreate creates obj, or reads it when it exists.
func getOrCreate(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
}
