package deploymenttargetclaim

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/provisioner"
)

// SetupWithManager registers the binder: claims, the targets that may
// satisfy or stop satisfying them, and what the provisioners watch.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, concurrency int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("deploymenttargetclaim").
		For(&as.DeploymentTargetClaim{}).
		Watches(&as.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(r.claimsFor)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
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

// claimsFor enqueues the claims a change of a target concerns: the one it
// names, the one naming it, and, when it is free, every unbound claim of its
// namespace.
func (r *Reconciler) claimsFor(ctx context.Context, obj client.Object) []reconcile.Request {
	dt, ok := obj.(*as.DeploymentTarget)
	if !ok {
		return nil
	}
	var list as.DeploymentTargetClaimList
	if err := r.Client.List(ctx, &list, client.InNamespace(dt.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing DeploymentTargetClaims for a DeploymentTarget", "deploymentTarget", dt.Name)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		c := &list.Items[i]
		if c.Name == dt.Spec.ClaimRef || c.Spec.TargetName == dt.Name ||
			(dt.Spec.ClaimRef == "" && c.Spec.TargetName == "" && c.Spec.DeploymentTargetClassName == dt.Spec.DeploymentTargetClassName) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
