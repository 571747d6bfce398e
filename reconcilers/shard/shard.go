// Package shard hands tenant namespaces between Argo CD instances: it claims
// a namespace labelled for this sidecar's instance once no other instance
// holds it, and releases one labelled away: everything this sidecar made for
// the tenant in its Argo CD namespace is deleted without deleting what Argo CD
// deployed (the new instance's Applications adopt the running workload), and
// only then is the namespace marked free for the new instance
// (sharding.AnnotationServedBy). Which namespace each reconciler serves is
// sharding.Shard's; this package only moves the mark.
package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// Claiming and releasing a namespace patches its annotation.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=patch

// Reasons of the Events on a namespace handed between instances.
const (
	ReasonClaimed  = "ArgoCDInstanceClaimed"
	ReasonReleased = "ArgoCDInstanceReleased"
)

// Reconciler claims and releases tenant namespaces for one instance. Not the
// kernel's full shape: a Namespace is not our CR (no finalizer, no status);
// the outcome still goes through kernel.Outcome.
type Reconciler struct {
	Client client.Client
	// APIReader confirms, uncached, that nothing of the tenant is left.
	APIReader     client.Reader
	ArgoNamespace string
	Shard         *sharding.Shard
	Recorder      record.EventRecorder
	// Never are namespaces that are never tenants (nontenant): never claimed.
	Never map[string]string

	mu sync.Mutex
	// started are the namespaces being released, looked at once already.
	started map[string]bool
}

// releasing says whether this is the first look at releasing ns.
func (r *Reconciler) releasing(ns string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started == nil {
		r.started = map[string]bool{}
	}
	first := !r.started[ns]
	r.started[ns] = true
	return first
}

// Reconcile handles one namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		r.Shard.Replay(ctx, req.Name, false)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, never := r.Never[ns.Name]; never {
		return ctrl.Result{}, nil
	}
	action := r.Shard.Decide(ns.Labels, ns.Annotations)
	r.Shard.Replay(ctx, ns.Name, action == sharding.Serve)
	switch action {
	case sharding.Claim:
		if !ns.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil
		}
		// The optimistic lock makes two instances that both want the
		// namespace (two defaults) claim it once: the loser waits.
		if err := r.mark(ctx, ns, r.Shard.Instance); err != nil {
			return kernel.Outcome(ctrl.Result{}, err)
		}
		r.event(ns, ReasonClaimed, "Argo CD instance %s serves this namespace", r.Shard.Instance)
	case sharding.Release:
		left, err := r.release(ctx, ns.Name)
		if err != nil {
			return kernel.Outcome(ctrl.Result{}, err)
		}
		// The first look always waits one more: a reconcile that was running
		// when the label changed may still write, and a fresh list after it
		// catches that write.
		if first := r.releasing(ns.Name); left > 0 || first {
			// Argo CD's and the garbage collector's deletions have no event here.
			return kernel.Outcome(ctrl.Result{}, kernel.Wait("ReleasingTenant", kernel.PollInterval, "%d objects of tenant %s in %s to go", left, ns.Name, r.ArgoNamespace))
		}
		if err := r.mark(ctx, ns, ""); err != nil {
			return kernel.Outcome(ctrl.Result{}, err)
		}
		r.mu.Lock()
		delete(r.started, ns.Name)
		r.mu.Unlock()
		r.event(ns, ReasonReleased, "Argo CD instance %s released this namespace: its Applications, ApplicationSets, AppProject and Secrets for it are gone, the deployed resources are kept", r.Shard.Instance)
	}
	return ctrl.Result{}, nil
}

// mark sets (or with "" removes) the served-by annotation, only over the
// namespace as read.
func (r *Reconciler) mark(ctx context.Context, ns *corev1.Namespace, instance string) error {
	patched := ns.DeepCopy()
	if instance == "" {
		delete(patched.Annotations, sharding.AnnotationServedBy)
	} else {
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[sharding.AnnotationServedBy] = instance
	}
	err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(ns, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return kernel.ErrStaleCache
	}
	if err != nil {
		return fmt.Errorf("marking namespace %s served by %q: %w", ns.Name, instance, err)
	}
	return nil
}

func (r *Reconciler) event(ns *corev1.Namespace, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(ns, corev1.EventTypeNormal, reason, format, args...)
	}
}

// release deletes, step by step, what we made for tenant in our Argo CD
// namespace, and says how many objects are still there (0: released).
// Argo CD's resources finalizer goes first, from every Application, so that no
// deletion of one (ours, or the garbage collector's once its ApplicationSet is
// gone) prunes the workload it deployed, which stays for the new instance to
// adopt; then the ApplicationSets, orphaning their Applications; then the
// Applications, the finalizer removed again in case the applicationset
// controller put it back meanwhile; then the AppProject and Secrets.
func (r *Reconciler) release(ctx context.Context, tenant string) (int, error) {
	ofTenant := []client.ListOption{client.InNamespace(r.ArgoNamespace),
		client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: tenant}}
	var apps argov1alpha1.ApplicationList
	if err := r.APIReader.List(ctx, &apps, ofTenant...); err != nil {
		return 0, fmt.Errorf("listing Applications of tenant %s: %w", tenant, err)
	}
	for i := range apps.Items {
		if err := r.keepResources(ctx, &apps.Items[i]); err != nil {
			return 0, err
		}
	}
	var sets argov1alpha1.ApplicationSetList
	if err := r.APIReader.List(ctx, &sets, ofTenant...); err != nil {
		return 0, fmt.Errorf("listing ApplicationSets of tenant %s: %w", tenant, err)
	}
	for i := range sets.Items {
		if err := r.delete(ctx, &sets.Items[i], metav1.DeletePropagationOrphan); err != nil {
			return 0, err
		}
	}
	if len(sets.Items) > 0 {
		return len(sets.Items), nil
	}
	for i := range apps.Items {
		if err := r.delete(ctx, &apps.Items[i], metav1.DeletePropagationBackground); err != nil {
			return 0, err
		}
	}
	if len(apps.Items) > 0 {
		return len(apps.Items), nil
	}
	var projects argov1alpha1.AppProjectList
	if err := r.APIReader.List(ctx, &projects, ofTenant...); err != nil {
		return 0, fmt.Errorf("listing AppProjects of tenant %s: %w", tenant, err)
	}
	var secrets corev1.SecretList
	if err := r.APIReader.List(ctx, &secrets, ofTenant...); err != nil {
		return 0, fmt.Errorf("listing Secrets of tenant %s: %w", tenant, err)
	}
	for i := range projects.Items {
		if err := r.delete(ctx, &projects.Items[i], metav1.DeletePropagationBackground); err != nil {
			return 0, err
		}
	}
	for i := range secrets.Items {
		if err := r.delete(ctx, &secrets.Items[i], metav1.DeletePropagationBackground); err != nil {
			return 0, err
		}
	}
	return len(projects.Items) + len(secrets.Items), nil
}

// keepResources removes Argo CD's resources (and post-delete) finalizer from
// app, so that its deletion leaves what it deployed.
func (r *Reconciler) keepResources(ctx context.Context, app *argov1alpha1.Application) error {
	kept := withoutPruning(app.Finalizers)
	if len(kept) == len(app.Finalizers) {
		return nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	app.Finalizers = kept
	if err := r.Client.Patch(ctx, app, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing Argo CD's resources finalizer from Application %s: %w", app.Name, err)
	}
	return nil
}

// delete deletes exactly the object listed (UID precondition).
func (r *Reconciler) delete(ctx context.Context, obj client.Object, propagation metav1.DeletionPropagation) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	uid := obj.GetUID()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(propagation))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// withoutPruning are finalizers without Argo CD's resources finalizer (and
// its /background and /foreground forms), the one that prunes what the
// Application deployed, and without its post-delete finalizer, which would
// run the tenant's post-delete hooks: the workload is moving, not going.
func withoutPruning(finalizers []string) []string {
	var kept []string
	for _, f := range finalizers {
		if !isArgoCD(f, argov1alpha1.ResourcesFinalizerName) && !isArgoCD(f, argov1alpha1.PostDeleteFinalizerName) {
			kept = append(kept, f)
		}
	}
	return kept
}

func isArgoCD(finalizer, name string) bool {
	return finalizer == name || strings.HasPrefix(finalizer, name+"/")
}

// SetupWithManager watches Namespaces: the label and the mark are all that
// decide. Not through the shard's queue: it must see every namespace. One
// worker, whatever the concurrency.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, _ int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("shard").
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[sharding.LabelArgoCDInstance] != e.ObjectNew.GetLabels()[sharding.LabelArgoCDInstance] ||
				hasLabel(e.ObjectOld) != hasLabel(e.ObjectNew) ||
				e.ObjectOld.GetAnnotations()[sharding.AnnotationServedBy] != e.ObjectNew.GetAnnotations()[sharding.AnnotationServedBy]
		}})).
		Complete(r)
}

func hasLabel(o client.Object) bool {
	_, ok := o.GetLabels()[sharding.LabelArgoCDInstance]
	return ok
}
