package notifications

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the run controller: every change of a
// PromotionRun (its status is where its events are) is looked at, and the
// runs still going of a namespace whose Environment's subscriptions change
// (a run that waits now is told to a new subscriber).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	going := kernel.MapListed(r.Client, func() client.ObjectList { return &as.PromotionRunList{} },
		func(_ *as.Environment, run *as.PromotionRun) bool {
			return run.Status.State != as.PromotionRunStateCompleted
		})
	return ctrl.NewControllerManagedBy(mgr).
		Named("notifications").
		For(&as.PromotionRun{}).
		Watches(&as.Environment{}, handler.EnqueueRequestsFromMapFunc(going), builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
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
