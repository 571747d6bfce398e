package repositorycredentials

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argosecret"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// SetupWithManager registers the reconciler, its index and watches. The
// manager's cache must hold only our Secrets of the Argo CD namespace (see
// extension/sidecar); the tenants' Secrets are read uncached.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.Verifier == nil {
		r.Verifier = HTTPVerifier{}
	}
	if r.RecheckInterval == 0 {
		r.RecheckInterval = DefaultRecheckInterval
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	r.secrets = argosecret.Store{
		Client: r.Client, APIReader: r.APIReader, Namespace: r.ArgoNamespace,
		Kind: ownership.KindRepositoryCredentials, Index: "repositorycredentials.owner",
	}
	onSecret, err := r.secrets.IndexAndWatch(ctx, mgr)
	if err != nil {
		return err
	}
	// The tenants' Secrets of our type are watched, so a changed or created
	// Secret is used at once.
	tenantSecrets, err := tenantsecret.Watch(mgr, v1.RepositoryCredentialSecretType, r.usersOf)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("repositorycredentials").
		// Our own status writes need no other look; the requeues cover the rest.
		For(&v1.GitOpsDeploymentRepositoryCredentials{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// A duplicate waits for the older one of its namespace: when that one
		// changes or goes, the others of the namespace are looked at again.
		Watches(&v1.GitOpsDeploymentRepositoryCredentials{}, handler.EnqueueRequestsFromMapFunc(r.sameNamespace),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleted()))).
		// A repository Secret edited or deleted by someone else is put back.
		Watches(&corev1.Secret{}, onSecret).
		WatchesRawSource(tenantSecrets).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// deleted passes deletions only (also when marked for deletion).
func deleted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		DeleteFunc: func(e event.DeleteEvent) bool { return true },
	}
}

// sameNamespace enqueues the other RepositoryCredentials of o's namespace for the same repository.
func (r *Reconciler) sameNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	rc, ok := o.(*v1.GitOpsDeploymentRepositoryCredentials)
	if !ok {
		return nil
	}
	var list v1.GitOpsDeploymentRepositoryCredentialsList
	if err := r.Client.List(ctx, &list, client.InNamespace(rc.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing GitOpsDeploymentRepositoryCredentials of a namespace for a watch event")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if other := &list.Items[i]; other.UID != rc.UID && argocd.SameRepository(other.Spec.Repository, rc.Spec.Repository) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
		}
	}
	return out
}

// usersOf enqueues the RepositoryCredentials of the Secret's namespace that name it.
func (r *Reconciler) usersOf(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	var list v1.GitOpsDeploymentRepositoryCredentialsList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing GitOpsDeploymentRepositoryCredentials naming a Secret for a watch event")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.Secret == s.Name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
