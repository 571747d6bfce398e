package promotionpreview

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler. A preview runs once per spec
// generation: status writes do not wake it.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("promotionpreview").
		For(&as.PromotionPreview{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(sharding.Sharded(ctx, &as.PromotionPreview{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}
