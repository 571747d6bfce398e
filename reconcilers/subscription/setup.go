package subscription

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler: subscriptions, on a change of
// their spec or a webhook's poll request. The Application's Components are
// read (cached) at each poll, not watched: a poll is what makes a Snapshot.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("snapshotsubscription").
		For(&as.SnapshotSubscription{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, pollRequested()))).
		WithOptions(sharding.Sharded(ctx, &as.SnapshotSubscription{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// pollRequested passes the updates in which a webhook asked for a poll (our
// own status writes need no other look: their requeue is set).
func pollRequested() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*as.SnapshotSubscription)
			after, ok2 := e.ObjectNew.(*as.SnapshotSubscription)
			return ok1 && ok2 && !after.Status.PollRequestedAt.Equal(before.Status.PollRequestedAt)
		},
	}
}
