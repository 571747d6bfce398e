package gitopsdeployment

import (
	"context"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

const (
	// ownerIndex indexes our Applications by "<tenant namespace>/<GitOpsDeployment name>".
	ownerIndex = "gitopsdeployment.owner"
	// environmentIndex indexes GitOpsDeployments by the ManagedEnvironment they use.
	environmentIndex = "gitopsdeployment.environment"
)

// SetupWithManager registers the reconciler, its indexes and watches.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	// The For predicate below passes every update event to Wrote.
	r.statusWrites = kernel.NewStatusWrites(r.APIReader).Deferring()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &argov1alpha1.Application{}, ownerIndex, func(o client.Object) []string {
		if owner := ownerOf(o); owner != nil {
			return []string{owner.String()}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1.GitOpsDeployment{}, environmentIndex, func(o client.Object) []string {
		if env := o.(*v1.GitOpsDeployment).Spec.Destination.Environment; env != "" {
			return []string{env}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("gitopsdeployment").
		// Not on our own status writes (~5 per new deployment while Argo CD
		// syncs it): they change nothing to do, and each reran the whole
		// reconcile (issue 13, peer). Nor on resyncs: the Applications' resync
		// wakes each deployment. Anyone else's write, a status edit included,
		// is looked at (and the status put back).
		For(&v1.GitOpsDeployment{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() && !r.statusWrites.Wrote(e.ObjectNew)
		}})).
		Watches(&argov1alpha1.Application{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if owner := ownerOf(o); owner != nil {
				return []reconcile.Request{{NamespacedName: *owner}}
			}
			return nil
		})).
		Watches(&v1.GitOpsDeploymentManagedEnvironment{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsUsing)).
		Watches(&v1.GitOpsDeploymentRepositoryCredentials{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsWaitingFor)).
		WithOptions(sharding.Sharded(ctx, &v1.GitOpsDeployment{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// ownerOf returns the GitOpsDeployment an Application of ours was made for.
func ownerOf(o client.Object) *types.NamespacedName {
	if owner, ok := ownership.Owner(o, ownership.KindGitOpsDeployment); ok {
		return &owner
	}
	return nil
}

// deploymentsUsing maps a ManagedEnvironment to the GitOpsDeployments that use it.
func (r *Reconciler) deploymentsUsing(ctx context.Context, o client.Object) []reconcile.Request {
	return kernel.Listed(ctx, r.Client, &v1.GitOpsDeploymentList{}, func(*v1.GitOpsDeployment) bool { return true },
		client.InNamespace(o.GetNamespace()), client.MatchingFields{environmentIndex: o.GetName()})
}

// deploymentsWaitingFor maps RepositoryCredentials to the deployments of
// their namespace refused because they could not read its repository: once
// the credentials are checked, the repository may go into the project.
func (r *Reconciler) deploymentsWaitingFor(ctx context.Context, o client.Object) []reconcile.Request {
	repo := o.(*v1.GitOpsDeploymentRepositoryCredentials).Spec.Repository
	return kernel.Listed(ctx, r.Client, &v1.GitOpsDeploymentList{}, func(gd *v1.GitOpsDeployment) bool {
		waiting := slices.ContainsFunc(gd.Status.Conditions, func(c v1.GitOpsDeploymentCondition) bool {
			return c.Type == kernel.ConditionReady && c.Reason == ReasonRepositoryNotReadable
		})
		return waiting && argocd.SameRepository(gd.Spec.Source.RepoURL, repo)
	}, client.InNamespace(o.GetNamespace()))
}
