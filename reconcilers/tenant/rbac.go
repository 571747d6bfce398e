package tenant

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// Only our key of argocd-rbac-cm: a server-side apply with our field manager
// never touches policy.csv or the admin's other keys.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;patch,namespace=argocd,resourceNames=argocd-rbac-cm
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// ReasonInvalidArgoCDSubjects is the reason of the Warning Event on a
// namespace whose tenant mapping has entries that are not used.
const ReasonInvalidArgoCDSubjects = "InvalidArgoCDSubjects"

// fieldOwner is our field manager on argocd-rbac-cm.
const fieldOwner = "gitops-service"

// PolicyReconciler keeps the tenants' global Argo CD policy
// (argocd.RBACPolicyKey in argocd-rbac-cm) in line with the mapping
// annotations of all namespaces. It has a single request.
type PolicyReconciler struct {
	Client client.Client
	// APIReader reads argocd-rbac-cm uncached (no ConfigMap informer).
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Shard leaves out the namespaces another Argo CD instance serves; nil: none.
	Shard *sharding.Shard
	// RBACConfigMap is Argo CD's RBAC ConfigMap; "" is argocd.RBACConfigMap.
	RBACConfigMap string
}

func (r *PolicyReconciler) rbacConfigMap() string {
	if r.RBACConfigMap != "" {
		return r.RBACConfigMap
	}
	return argocd.RBACConfigMap
}

// invalidSubjects is the Warning for the entries of annotation that are ignored.
func invalidSubjects(annotation string, invalid []string) string {
	return fmt.Sprintf("annotation %s: ignoring %q: Argo CD subjects are user or group names without quotes, '#' or line breaks, and not role: or proj: subjects",
		annotation, strings.Join(invalid, ", "))
}

// Reconcile rebuilds the policy from every annotated namespace.
func (r *PolicyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var nss corev1.NamespaceList
	if err := r.Client.List(ctx, &nss); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing namespaces: %w", err)
	}
	var subjects []string
	for i := range nss.Items {
		ns := &nss.Items[i]
		// Argo CD's own namespace is never a tenant.
		if ns.Name == r.ArgoNamespace || !ns.DeletionTimestamp.IsZero() ||
			(r.Shard != nil && r.Shard.Decide(ns.Labels, ns.Annotations) != sharding.Serve) {
			continue
		}
		valid, invalid := argocd.ParseSubjects(ns.Annotations[argocd.AnnotationArgoCDSubjects])
		subjects = append(subjects, valid...)
		if len(invalid) > 0 && r.Recorder != nil {
			kernel.Warning(r.Recorder, ns, ReasonInvalidArgoCDSubjects, invalidSubjects(argocd.AnnotationArgoCDSubjects, invalid))
		}
		// The release managers grant nothing in Argo CD (the panel's backend
		// reads them), but a bad entry is reported the same way.
		if _, invalid := argocd.ParseSubjects(ns.Annotations[argocd.AnnotationArgoCDReleaseManagers]); len(invalid) > 0 && r.Recorder != nil {
			kernel.Warning(r.Recorder, ns, ReasonInvalidArgoCDSubjects, invalidSubjects(argocd.AnnotationArgoCDReleaseManagers, invalid))
		}
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: r.rbacConfigMap(), Namespace: r.ArgoNamespace},
	}
	// Nobody mapped: apply without the key, which removes it.
	if policy := argocd.TenantRBACPolicy(subjects); policy != "" {
		cm.Data = map[string]string{argocd.RBACPolicyKey: policy}
	}
	current := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cm), current); err != nil {
		// Never create Argo CD's ConfigMap: without it Argo CD is not installed here.
		return ctrl.Result{}, fmt.Errorf("reading %s/%s: %w", r.ArgoNamespace, r.rbacConfigMap(), err)
	}
	want, wantKey := cm.Data[argocd.RBACPolicyKey]
	have, haveKey := current.Data[argocd.RBACPolicyKey]
	if want == have && wantKey == haveKey {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Patch(ctx, cm, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying %s to %s/%s: %w", argocd.RBACPolicyKey, r.ArgoNamespace, r.rbacConfigMap(), err)
	}
	return ctrl.Result{}, nil
}

// policyRequest is the single request of the PolicyReconciler.
var policyRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: argocd.RBACPolicyKey}}

// SetupWithManager watches namespaces: their mapping annotation, and their
// deletion. The start lists every namespace, which also puts back a key
// someone removed.
func (r *PolicyReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, _ int) error {
	toPolicy := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{policyRequest}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant-rbac").
		Watches(&corev1.Namespace{}, toPolicy, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool {
				return e.Object.GetAnnotations()[argocd.AnnotationArgoCDSubjects] != "" || e.Object.GetAnnotations()[argocd.AnnotationArgoCDReleaseManagers] != ""
			},
			UpdateFunc: func(e event.UpdateEvent) bool {
				// The instance's mark follows its label: a moved tenant's users go.
				return e.ObjectOld.GetAnnotations()[argocd.AnnotationArgoCDSubjects] != e.ObjectNew.GetAnnotations()[argocd.AnnotationArgoCDSubjects] ||
					e.ObjectOld.GetAnnotations()[argocd.AnnotationArgoCDReleaseManagers] != e.ObjectNew.GetAnnotations()[argocd.AnnotationArgoCDReleaseManagers] ||
					e.ObjectOld.GetAnnotations()[sharding.AnnotationServedBy] != e.ObjectNew.GetAnnotations()[sharding.AnnotationServedBy] ||
					e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
			},
			DeleteFunc: func(e event.DeleteEvent) bool {
				return e.Object.GetAnnotations()[argocd.AnnotationArgoCDSubjects] != ""
			},
		})).
		Complete(r)
}
