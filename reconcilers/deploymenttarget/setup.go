package deploymenttarget

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// SetupWithManager registers the reclaimer: targets, and the claims whose
// disappearance releases them.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.ReleaseTimeout == 0 {
		r.ReleaseTimeout = DefaultReleaseTimeout
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("deploymenttarget").
		For(&as.DeploymentTarget{}).
		Watches(&as.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(r.targetsOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// targetsOf enqueues the targets a claim names or that name it.
func (r *Reconciler) targetsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	claim, ok := obj.(*as.DeploymentTargetClaim)
	if !ok {
		return nil
	}
	var list as.DeploymentTargetList
	if err := r.Client.List(ctx, &list, client.InNamespace(claim.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing DeploymentTargets for a claim", "claim", claim.Name)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		dt := &list.Items[i]
		if dt.Spec.ClaimRef == claim.Name || claim.Spec.TargetName == dt.Name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(dt)})
		}
	}
	return out
}
