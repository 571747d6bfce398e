package managedenvironment

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// ownerIndex indexes our cluster Secrets by "<tenant namespace>/<environment name>".
const ownerIndex = "managedenvironment.owner"

// SetupWithManager registers the reconciler, its index and watches. The
// manager's cache must hold only our Secrets of the Argo CD namespace (see
// extension/sidecar); the tenants' Secrets are read uncached.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.Now == nil {
		r.Now = metav1.Now
	}
	if r.RemoteClient == nil {
		r.RemoteClient = NewRemoteClient
	}
	if r.RecheckInterval == 0 {
		r.RecheckInterval = DefaultRecheckInterval
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	if r.CleanupTimeout == 0 {
		r.CleanupTimeout = DefaultCleanupTimeout
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, ownerIndex, func(o client.Object) []string {
		if owner := ownerOf(o); owner != nil {
			return []string{owner.String()}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("managedenvironment").
		// Our own status writes do not need another look (each is a connection
		// to the cluster); the periodic requeue covers the rest.
		For(&v1.GitOpsDeploymentManagedEnvironment{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// A cluster Secret edited or deleted by someone else is put back.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if owner := ownerOf(o); owner != nil {
				return []reconcile.Request{{NamespacedName: *owner}}
			}
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// ownerOf returns the ManagedEnvironment a cluster Secret of ours was made for.
func ownerOf(o client.Object) *types.NamespacedName {
	l := o.GetLabels()
	if l[argocd.LabelManagedBy] != argocd.ManagedByValue || l[argocd.LabelOwnerKind] != argocd.OwnerKindManagedEnvironment {
		return nil
	}
	ns, name, ok := strings.Cut(o.GetAnnotations()[argocd.AnnotationOwnerName], "/")
	if !ok || ns == "" || name == "" || ns != l[argocd.LabelTenantNS] {
		return nil
	}
	return &types.NamespacedName{Namespace: ns, Name: name}
}
