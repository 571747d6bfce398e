// Package nontenant refuses the GitOps Service's CRs in namespaces that are never
// tenants: the Argo CD namespace (an Application there may name any project, so a
// "tenant" there could escalate to every namespace), the sidecar's own namespace
// and a list the platform admin configures (kube-system and friends by default).
//
// The sidecar's main cache does not see these namespaces at all (Exclude), so no
// reconciler can write anything for them; this package watches only them, with a
// cache of its own, and gives every CR there a condition and a Warning Event.
package nontenant

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// DefaultNeverTenants are refused unless the admin configures another list.
var DefaultNeverTenants = []string{"kube-system", "kube-public", "kube-node-lease"}

// Reason is the condition reason of a refused CR.
const Reason = "NamespaceNotATenant"

// Namespaces is the set of namespaces that are never tenants, with why.
type Namespaces map[string]string

// New builds the set from the Argo CD namespace, the sidecar's own namespace (may
// be empty when unknown) and the admin's list.
func New(argoNamespace, sidecarNamespace string, neverTenants []string) Namespaces {
	n := Namespaces{}
	for _, ns := range neverTenants {
		if ns = strings.TrimSpace(ns); ns != "" {
			n[ns] = "it is on the sidecar's list of namespaces that are never tenants (--never-tenant-namespaces)"
		}
	}
	if sidecarNamespace != "" {
		n[sidecarNamespace] = "it is the GitOps Service sidecar's own namespace"
	}
	n[argoNamespace] = "it is the Argo CD namespace, where an Application could reach every namespace"
	return n
}

// Names are the namespaces, sorted.
func (n Namespaces) Names() []string {
	out := make([]string, 0, len(n))
	for ns := range n {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// Exclude is a field selector matching objects outside these namespaces: the main
// cache's selector for the CR kinds.
func (n Namespaces) Exclude() fields.Selector {
	var sel []fields.Selector
	for _, ns := range n.Names() {
		sel = append(sel, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return fields.AndSelectors(sel...)
}

// Message is the condition message of a CR in namespace ns.
func (n Namespaces) Message(ns string) string {
	return fmt.Sprintf("namespace %q is not a GitOps Service tenant: %s; nothing is deployed from it", ns, n[ns])
}

// Kinds are the CR kinds the sidecar reconciles: each is refused here.
func Kinds() []client.Object {
	return []client.Object{
		&v1.GitOpsDeployment{}, &v1.GitOpsDeploymentSyncRun{},
		&v1.GitOpsDeploymentManagedEnvironment{}, &v1.GitOpsDeploymentRepositoryCredentials{},
		&appstudio.Environment{}, &appstudio.SnapshotEnvironmentBinding{}, &appstudio.PromotionRun{},
		&appstudio.DeploymentTargetClaim{}, &appstudio.DeploymentTarget{}, &appstudio.PromotionPreview{},
		&appstudio.SnapshotSubscription{},
	}
}

// ourFinalizers are finalizers clients set for the sidecar; with nothing written
// there is nothing to clean up, so they only hold deletion.
var ourFinalizers = []string{
	v1.FinalizerResourcesFinalizer, v1.FinalizerManagedEnvironment, v1.FinalizerRepositoryCredentials,
	appstudio.FinalizerBinder, appstudio.FinalizerDT,
}

// Reconciler sets the refusal condition on one kind of CR.
type Reconciler struct {
	Namespaces Namespaces
	// Reader is the cache of the refused namespaces; Client writes.
	Reader   client.Reader
	Client   client.Client
	Recorder record.EventRecorder
	Kind     client.Object
	Now      func() metav1.Time
}

// Reconcile refuses one CR. Not the kernel's full shape: nothing is ever
// written for a CR here, so no finalizer of ours goes on and clients' ones
// come off at deletion; and the refusal is not looked at again
// (RefusalRetry), as the namespaces never change while the sidecar runs and
// a change of the CR wakes us.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	if _, refused := r.Namespaces[req.Namespace]; !refused {
		return ctrl.Result{}, nil
	}
	obj := r.Kind.DeepCopyObject().(client.Object)
	if err := r.Reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.releaseFinalizers(ctx, obj)
	}
	patcher := kernel.NewStatusPatcher(r.Client, obj)
	defer patcher.Patch(ctx, obj, &err)
	refuse(r.Recorder, obj, r.Namespaces.Message(req.Namespace), r.Now())
	return ctrl.Result{}, nil
}

// releaseFinalizers removes the finalizers clients set for the sidecar.
func (r *Reconciler) releaseFinalizers(ctx context.Context, obj client.Object) error {
	for _, f := range ourFinalizers {
		if err := kernel.RemoveFinalizer(ctx, r.Client, obj, f); err != nil {
			return err
		}
	}
	return nil
}

// refuse sets the kind's error condition, with a Warning Event when it is
// new or changed; it says whether anything changed.
func refuse(rec record.EventRecorder, obj client.Object, msg string, now metav1.Time) bool {
	cond := metav1.Condition{Status: metav1.ConditionTrue, Reason: Reason, Message: msg, ObservedGeneration: obj.GetGeneration()}
	set := func(conds *[]metav1.Condition, typ string) bool {
		c := cond
		c.Type = typ
		return kernel.SetCondition(rec, obj, conds, c, now, true)
	}
	switch o := obj.(type) {
	case *v1.GitOpsDeployment:
		return kernel.SetErrorReason(rec, obj, &o.Status.Conditions, Reason, msg, now)
	case *v1.GitOpsDeploymentSyncRun:
		return kernel.SetErrorReason(rec, obj, &o.Status.Conditions, Reason, msg, now)
	case *v1.GitOpsDeploymentManagedEnvironment:
		cond.Status = metav1.ConditionFalse
		return set(&o.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
	case *v1.GitOpsDeploymentRepositoryCredentials:
		return set(&o.Status.Conditions, v1.RepositoryCredentialConditionErrorOccurred)
	case *appstudio.Environment:
		return set(&o.Status.Conditions, appstudio.EnvironmentConditionErrorOccurred)
	case *appstudio.SnapshotEnvironmentBinding:
		return set(&o.Status.BindingConditions, appstudio.BindingConditionErrorOccurred)
	case *appstudio.PromotionRun:
		return set(&o.Status.Conditions, appstudio.PromotionRunConditionErrorOccurred)
	case *appstudio.DeploymentTargetClaim:
		return set(&o.Status.Conditions, appstudio.DeploymentTargetConditionErrorOccurred)
	case *appstudio.DeploymentTarget:
		return set(&o.Status.Conditions, appstudio.DeploymentTargetConditionErrorOccurred)
	case *appstudio.PromotionPreview:
		return set(&o.Status.Conditions, appstudio.PromotionPreviewConditionFailed)
	case *appstudio.SnapshotSubscription:
		cond.Status = metav1.ConditionFalse
		return set(&o.Status.Conditions, appstudio.SubscriptionConditionSourcesResolved)
	}
	return false
}

// Setup starts a cache of the refused namespaces only and one controller per CR kind.
func Setup(mgr ctrl.Manager, n Namespaces, concurrency int) error {
	nsConfig := map[string]cache.Config{}
	for _, ns := range n.Names() {
		nsConfig[ns] = cache.Config{}
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:        mgr.GetHTTPClient(),
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: nsConfig,
		DefaultTransform:  cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("cache of the namespaces that are never tenants: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	for _, kind := range Kinds() {
		gvk, err := apiutil.GVKForObject(kind, mgr.GetScheme())
		if err != nil {
			return err
		}
		r := &Reconciler{
			Namespaces: n, Reader: c, Client: mgr.GetClient(), Kind: kind,
			Recorder: mgr.GetEventRecorderFor("gitops-service"), Now: metav1.Now,
		}
		ctl, err := controller.New("nontenant-"+strings.ToLower(gvk.Kind), mgr, controller.Options{Reconciler: r, MaxConcurrentReconciles: concurrency})
		if err != nil {
			return err
		}
		if err := ctl.Watch(source.Kind(c, kind, &handler.TypedEnqueueRequestForObject[client.Object]{})); err != nil {
			return err
		}
	}
	return nil
}

var _ reconcile.Reconciler = &Reconciler{}
