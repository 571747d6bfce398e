package promotionrun

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/targetcluster"
)

// Where the digests running come from: the Pods' own
// status.containerStatuses[].imageID, read from the cluster the Application
// deploys to. Argo CD does not have them: its resource tree and
// status.summary.images carry the images the Pods' specs name (tags), not
// what the kubelet pulled. So the workloads Argo CD manages for the
// Application (status.resources: Deployments, StatefulSets, DaemonSets,
// ReplicaSets) are read, and the Pods they control listed by their selector,
// uncached (a Pod restarting on a moved tag is seen at the next read, and no
// cluster-wide Pod cache is kept):
//   - on Argo CD's own cluster with the sidecar's identity (read-only rights
//     on workloads and Pods, manifests/rbac);
//   - on a ManagedEnvironment's cluster with the credentials Argo CD deploys
//     with there (the tenant's Argo CD cluster Secret), through the egress
//     check of API servers, as the preview does.

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets;replicasets,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch

// liveTimeout bounds each read of a target cluster.
const liveTimeout = 15 * time.Second

// maxLivePods bounds the Pods read of one workload.
const maxLivePods = 500

// workloadKinds are the kinds whose Pods are read (group apps).
var workloadKinds = map[string]client.Object{
	"Deployment": &appsv1.Deployment{}, "StatefulSet": &appsv1.StatefulSet{}, "DaemonSet": &appsv1.DaemonSet{}, "ReplicaSet": &appsv1.ReplicaSet{},
}

// liveEnvironments are the Environments whose live workloads a pass reads:
// those of the level in progress (its steps entered together: the same
// startTime; those verified already are verified again until the level is
// done) and of the verified steps still soaking.
func liveEnvironments(run *as.PromotionRun, envs []as.Environment, now time.Time) []string {
	var out []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status == as.PromotionRunEnvironmentStatusFailure {
			continue
		}
		for _, c := range run.Status.EnvironmentStatus {
			if c.Status == as.PromotionRunEnvironmentStatusInProgress && (c.EnvironmentName == s.EnvironmentName ||
				s.StartTime != nil && c.StartTime != nil && s.StartTime.Equal(c.StartTime)) {
				out = append(out, s.EnvironmentName)
				break
			}
		}
	}
	for _, env := range soaking(run, envs, now) {
		if !slices.Contains(out, env) {
			out = append(out, env)
		}
	}
	return out
}

// gatherLive reads the live workloads of the Applications generated for the
// bindings of the Environments liveEnvironments names, once they deploy the
// run's Snapshot. A read that fails is a Problem of that Application (the
// step waits and says so), not an error of the pass.
func (r *Reconciler) gatherLive(ctx context.Context, w *world) {
	run := w.Run
	w.Live = map[string]*liveWorkloads{}
	for _, env := range liveEnvironments(run, w.Environments, w.Now.Time) {
		seb := binding.Of(w.Bindings, run.Spec.Application, env)
		if seb == nil || seb.Spec.Snapshot != snapshotOf(run) {
			continue
		}
		for i := range w.Generated[seb.UID] {
			app := &w.Generated[seb.UID][i]
			w.Live[app.Name] = r.readLive(ctx, run.Namespace, app)
		}
	}
}

// readLive reads the Pods of app's workloads on its destination cluster.
func (r *Reconciler) readLive(ctx context.Context, ns string, app *argov1alpha1.Application) *liveWorkloads {
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	c, done, problem := r.targetReader(ctx, ns, app)
	if problem != "" {
		return &liveWorkloads{Problem: problem}
	}
	defer done()
	live := &liveWorkloads{}
	for _, res := range app.Status.Resources {
		proto, ok := workloadKinds[res.Kind]
		if res.Group != appsv1.GroupName || !ok || res.Namespace == "" {
			continue
		}
		obj := proto.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKey{Namespace: res.Namespace, Name: res.Name}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return &liveWorkloads{Problem: fmt.Sprintf("reading %s %s/%s on its cluster: %s", res.Kind, res.Namespace, res.Name, readProblem(err))}
		}
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(obj))
		if err != nil || sel.Empty() {
			continue
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(res.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.Limit(maxLivePods)); err != nil {
			return &liveWorkloads{Problem: fmt.Sprintf("listing the Pods of %s %s/%s on its cluster: %s", res.Kind, res.Namespace, res.Name, readProblem(err))}
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; controlledBy(p, res.Kind, obj) {
				live.Pods = append(live.Pods, podOf(p))
			}
		}
	}
	return live
}

// readProblem is a read error as a status may say it (no server response body).
func readProblem(err error) string {
	if apierrors.IsForbidden(err) {
		return "forbidden"
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		return string(s.Status().Reason)
	}
	return "unreachable"
}

func selectorOf(obj client.Object) *metav1.LabelSelector {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Selector
	case *appsv1.StatefulSet:
		return o.Spec.Selector
	case *appsv1.DaemonSet:
		return o.Spec.Selector
	case *appsv1.ReplicaSet:
		return o.Spec.Selector
	}
	return nil
}

// controlledBy says whether the workload controls p: its controller is the
// workload, or, for a Deployment, one of its ReplicaSets (<name>-<hash>):
// another workload's Pods matching the selector do not count.
func controlledBy(p *corev1.Pod, kind string, workload client.Object) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return false
	}
	if kind == "Deployment" {
		return ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.Name, workload.GetName()+"-")
	}
	return ref.UID == workload.GetUID()
}

func podOf(p *corev1.Pod) livePod {
	lp := livePod{Name: p.Name, Deleting: p.DeletionTimestamp != nil}
	statuses := map[string]corev1.ContainerStatus{}
	for _, s := range p.Status.ContainerStatuses {
		statuses[s.Name] = s
	}
	for _, c := range p.Spec.Containers {
		s := statuses[c.Name]
		lp.Containers = append(lp.Containers, liveContainer{Name: c.Name, Image: c.Image, ImageID: s.ImageID, Running: s.State.Running != nil})
	}
	return lp
}

// targetReader reads app's destination cluster: Argo CD's own with the
// sidecar's uncached reader, another with the credentials of the tenant's
// ManagedEnvironment for that server (its Argo CD cluster Secret).
// The returned done releases what the reader holds (a remote one's connections).
func (r *Reconciler) targetReader(ctx context.Context, ns string, app *argov1alpha1.Application) (_ client.Reader, done func(), problem string) {
	server := app.Spec.Destination.Server
	if server == argocd.LocalServer {
		return r.APIReader, func() {}, ""
	}
	cfg, err := targetcluster.Config(ctx, r.Client, r.ArgoNamespace, targetcluster.Target{Namespace: ns, Server: server, Project: app.Spec.Project},
		r.Egress, liveTimeout, "gitops-service-verify")
	if err != nil {
		return nil, nil, "reading the credentials of its cluster failed"
	}
	notReady := "the credentials of its cluster are not ready (see the Environment's GitOpsDeploymentManagedEnvironment)"
	if cfg == nil {
		return nil, nil, notReady
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, notReady
	}
	// The token never follows a redirect.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: hc})
	if err != nil {
		return nil, nil, notReady
	}
	return c, hc.CloseIdleConnections, ""
}
