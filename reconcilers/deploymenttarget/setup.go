package deploymenttarget

import (
	"cmp"
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reclaimer: targets, and the claims whose
// disappearance releases them.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.ReleaseTimeout = cmp.Or(r.ReleaseTimeout, DefaultReleaseTimeout)
	return ctrl.NewControllerManagedBy(mgr).
		Named("deploymenttarget").
		For(&as.DeploymentTarget{}).
		Watches(&as.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(targetsOf(r.Client))).
		WithOptions(sharding.Sharded(ctx, &as.DeploymentTarget{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// targetsOf enqueues the targets a claim names or that name it.
func targetsOf(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, func() client.ObjectList { return &as.DeploymentTargetList{} },
		func(claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) bool {
			return dt.Spec.ClaimRef == claim.Name || claim.Spec.TargetName == dt.Name
		})
}
