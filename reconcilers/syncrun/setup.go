package syncrun

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler and its watches: a run waits for
// its GitOpsDeployment and follows the deployment's Application.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("syncrun").
		For(&v1.GitOpsDeploymentSyncRun{}).
		Watches(&v1.GitOpsDeployment{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.runsOf(ctx, o.GetNamespace(), o.GetName())
		})).
		// Only our Applications are cached; each names its deployment.
		Watches(&argov1alpha1.Application{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if owner, ok := ownership.Owner(o, ownership.KindGitOpsDeployment); ok {
				return r.runsOf(ctx, owner.Namespace, owner.Name)
			}
			return nil
		})).
		WithOptions(sharding.Sharded(ctx, &v1.GitOpsDeploymentSyncRun{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// runsOf returns the unfinished SyncRuns of a deployment.
func (r *Reconciler) runsOf(ctx context.Context, namespace, deployment string) []reconcile.Request {
	return kernel.Listed(ctx, r.Client, &v1.GitOpsDeploymentSyncRunList{}, func(run *v1.GitOpsDeploymentSyncRun) bool {
		return run.Spec.GitopsDeploymentName == deployment && (!run.Status.Finished() || !run.DeletionTimestamp.IsZero())
	}, client.InNamespace(namespace))
}
