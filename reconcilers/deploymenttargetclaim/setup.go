package deploymenttargetclaim

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the binder: claims, the targets that may
// satisfy or stop satisfying them, and what the provisioners watch.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("deploymenttargetclaim").
		For(&as.DeploymentTargetClaim{}).
		Watches(&as.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(claimsFor(r.Client))).
		WithOptions(sharding.Sharded(ctx, &as.DeploymentTargetClaim{}, controller.Options{MaxConcurrentReconciles: concurrency}))
	for _, p := range r.Provisioners {
		if w, ok := p.(provisioner.Watcher); ok {
			b = b.Watches(w.Watched(), handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
				if key, ok := w.ClaimOf(obj); ok {
					return []reconcile.Request{{NamespacedName: key}}
				}
				return nil
			}))
		}
	}
	return b.Complete(r)
}

// claimsFor enqueues the claims of its namespace a change of a target concerns.
func claimsFor(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, func() client.ObjectList { return &as.DeploymentTargetClaimList{} }, concerns)
}
