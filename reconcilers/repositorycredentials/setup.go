package repositorycredentials

import (
	"cmp"
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argosecret"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler, its index and watches. The
// manager's cache must hold only our Secrets of the Argo CD namespace (see
// extension/sidecar); the tenants' Secrets are read uncached.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.Verifier == nil {
		r.Verifier = GitVerifier{}
	}
	r.RecheckInterval = cmp.Or(r.RecheckInterval, DefaultRecheckInterval)
	r.RetryInterval = cmp.Or(r.RetryInterval, DefaultRetryInterval)
	r.secrets = argosecret.Store{
		Client: r.Client, APIReader: r.APIReader, Namespace: r.ArgoNamespace,
		Kind: ownership.KindRepositoryCredentials, Index: "repositorycredentials.owner",
	}
	b, err := r.secrets.Controller(ctx, mgr, "repositorycredentials", &v1.GitOpsDeploymentRepositoryCredentials{},
		v1.RepositoryCredentialSecretType, usersOf(r.Client))
	if err != nil {
		return err
	}
	return b.
		// A duplicate waits for the older one of its namespace: when that one
		// changes or goes, the others of the namespace are looked at again.
		Watches(&v1.GitOpsDeploymentRepositoryCredentials{}, handler.EnqueueRequestsFromMapFunc(sameNamespace(r.Client)),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deleted()))).
		WithOptions(sharding.Sharded(ctx, &v1.GitOpsDeploymentRepositoryCredentials{}, controller.Options{MaxConcurrentReconciles: concurrency})).
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
func sameNamespace(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, rcList, func(rc, other *v1.GitOpsDeploymentRepositoryCredentials) bool {
		return other.UID != rc.UID && argocd.SameRepository(other.Spec.Repository, rc.Spec.Repository)
	})
}

// usersOf enqueues the RepositoryCredentials of the Secret's namespace that name it.
func usersOf(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, rcList, func(s *corev1.Secret, rc *v1.GitOpsDeploymentRepositoryCredentials) bool {
		return rc.Spec.Secret == s.Name
	})
}

func rcList() client.ObjectList { return &v1.GitOpsDeploymentRepositoryCredentialsList{} }
