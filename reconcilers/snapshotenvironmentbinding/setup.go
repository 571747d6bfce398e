package snapshotenvironmentbinding

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// ownerUIDIndex indexes Argo CD objects made for a binding by the binding's UID.
const ownerUIDIndex = "binding.owner-uid"

// SetupWithManager registers the reconciler and everything whose change must
// reach Argo CD: the binding, its Snapshot, Environment and Components, and the
// Argo CD objects made for it.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.statusWrites = kernel.NewStatusWrites(r.APIReader)
	if err := mgr.GetFieldIndexer().IndexField(ctx, &argov1alpha1.Application{}, ownerUIDIndex, func(o client.Object) []string {
		if l := o.GetLabels(); l[ownership.LabelManagedBy] == ownership.ManagedByValue && l[ownership.LabelOwnerKind] == ownership.KindBinding {
			return []string{l[ownership.LabelOwnerUID]}
		}
		return nil
	}); err != nil {
		return err
	}
	ours := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if owner, ok := ownership.Owner(o, ownership.KindBinding); ok {
			return []reconcile.Request{{NamespacedName: owner}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("snapshotenvironmentbinding").
		For(&as.SnapshotEnvironmentBinding{}, builder.WithPredicates(r.notOwnStatusWrites())).
		Watches(&argov1alpha1.ApplicationSet{}, ours).
		Watches(&argov1alpha1.Application{}, ours, builder.WithPredicates(applicationUpdates())).
		Watches(&as.Snapshot{}, r.bindingsWhere(func(seb *as.SnapshotEnvironmentBinding, o client.Object) bool {
			return seb.Spec.Snapshot == o.GetName()
		})).
		Watches(&as.Environment{}, r.bindingsWhere(func(seb *as.SnapshotEnvironmentBinding, o client.Object) bool {
			return seb.Spec.Environment == o.GetName()
		})).
		Watches(&as.Component{}, r.bindingsWhere(func(seb *as.SnapshotEnvironmentBinding, o client.Object) bool {
			return seb.Spec.Application == o.(*as.Component).Spec.Application
		})).
		Watches(&as.Application{}, r.bindingsWhere(func(seb *as.SnapshotEnvironmentBinding, o client.Object) bool {
			return seb.Spec.Application == o.GetName()
		})).
		WithOptions(sharding.Sharded(ctx, &as.SnapshotEnvironmentBinding{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// bindingsWhere maps an object to the bindings of its namespace that use it.
func (r *Reconciler) bindingsWhere(uses func(*as.SnapshotEnvironmentBinding, client.Object) bool) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return kernel.Listed(ctx, r.Client, &as.SnapshotEnvironmentBindingList{}, func(seb *as.SnapshotEnvironmentBinding) bool {
			return uses(seb, o)
		}, client.InNamespace(o.GetNamespace()))
	})
}
