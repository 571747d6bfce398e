package notifications

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the run controller: every change of a
// PromotionRun (its status is where its events are) is looked at.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("notifications").
		For(&as.PromotionRun{}).
		WithOptions(sharding.Sharded(ctx, &as.PromotionRun{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// SetupWithManager registers the subscription controller: an Environment's
// subscriptions are its annotations.
func (r *SubscriptionReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("notifications-subscriptions").
		For(&as.Environment{}, builder.WithPredicates(predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.GenerationChangedPredicate{}))).
		WithOptions(sharding.Sharded(ctx, &as.Environment{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}
