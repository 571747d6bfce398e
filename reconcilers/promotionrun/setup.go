package promotionrun

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler and its watches: a run follows its
// bindings and their generated Applications, and a waiting run starts when the
// run before it completes or goes away.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("promotionrun").
		For(&as.PromotionRun{}).
		Watches(&as.PromotionRun{}, handler.Funcs{
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if run := e.ObjectNew.(*as.PromotionRun); run.Status.State == as.PromotionRunStateCompleted {
					r.wake(ctx, run, q)
				}
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if run, ok := e.Object.(*as.PromotionRun); ok {
					r.wake(ctx, run, q)
				}
			},
		}).
		Watches(&as.SnapshotEnvironmentBinding{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.runsOf(ctx, o.GetNamespace(), o.(*as.SnapshotEnvironmentBinding).Spec.Application, as.PromotionRunStateActive)
		})).
		// A gate opens when its Environment changes (unfrozen, a window
		// removed), an approval comes or a claim is bound: the namespace's
		// unfinished runs look again.
		Watches(&as.Environment{}, handler.EnqueueRequestsFromMapFunc(r.unfinished)).
		Watches(&as.PromotionApproval{}, handler.EnqueueRequestsFromMapFunc(r.unfinished)).
		// A completed preview may let in the unfinished runs of its
		// Application (an Environment that requires one, preview_gate.go).
		// The PromotionPreview reconciler caches them already.
		Watches(&as.PromotionPreview{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			p := o.(*as.PromotionPreview)
			if !previewCompleted(p) {
				return nil
			}
			return kernel.Listed(ctx, r.Client, &as.PromotionRunList{}, func(run *as.PromotionRun) bool {
				return run.Spec.Application == p.Spec.Application && run.Status.State != as.PromotionRunStateCompleted
			}, client.InNamespace(p.Namespace))
		})).
		Watches(&as.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(r.unfinished)).
		// A PromotionPolicy (cluster-scoped) changed: every unfinished run
		// looks again (policy_gate.go).
		Watches(&as.PromotionPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return kernel.Listed(ctx, r.Client, &as.PromotionRunList{}, func(run *as.PromotionRun) bool {
				return run.Status.State != as.PromotionRunStateCompleted
			})
		})).
		// A released hold moves the held runs on (rollback.go).
		Watches(&as.PromotionHistory{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.runsOf(ctx, o.GetNamespace(), o.(*as.PromotionHistory).Spec.Application, as.PromotionRunStateActive)
		})).
		// Only Argo CD's namespace is cached; our generated Applications name
		// their tenant and App Studio application.
		Watches(&argov1alpha1.Application{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			l := o.GetLabels()
			if !ownership.IsOwnedBy(l, ownership.KindBinding, l[ownership.LabelOwnerUID]) || l[ownership.LabelTenantNS] == "" {
				return nil
			}
			return r.runsOf(ctx, l[ownership.LabelTenantNS], l[as.LabelApplication], as.PromotionRunStateActive)
		}))
	// Whether approvals count changes with the admission policies
	// (identity.go): every unfinished run looks again. An API server
	// without them (Kubernetes < 1.30) has nothing to watch; the runs look
	// again every WaitingRetry.
	if _, err := mgr.GetRESTMapper().RESTMapping(admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy").GroupKind(), admissionv1.SchemeGroupVersion.Version); err == nil {
		all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return kernel.Listed(ctx, r.Client, &as.PromotionRunList{}, func(run *as.PromotionRun) bool {
				return run.Status.State != as.PromotionRunStateCompleted
			})
		})
		b = b.Watches(&admissionv1.ValidatingAdmissionPolicy{}, all).Watches(&admissionv1.ValidatingAdmissionPolicyBinding{}, all)
	}
	// At start-up the log says whether approvals and requesters count; the
	// runs a gate holds say it on their own (ApprovalIdentityNotEnforced).
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		log := ctrl.LoggerFrom(ctx).WithName("promotionrun")
		e, err := r.identityEnforcement(ctx)
		switch {
		case err != nil:
			log.Error(err, "reading the admission policies")
		case !e.Enforced():
			log.Info("approvals and requesters do not count: the API server does not enforce who wrote them", "problem", e.Problem)
		default:
			log.Info("approvals and requesters count: the shipped admission policies are live", "since", e.Since)
		}
		return nil
	})); err != nil {
		return err
	}
	return b.WithOptions(sharding.Sharded(ctx, &as.PromotionRun{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// wake queues the waiting runs of a run's application: it completed or is gone.
func (r *Reconciler) wake(ctx context.Context, run *as.PromotionRun, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range r.runsOf(ctx, run.Namespace, run.Spec.Application, as.PromotionRunStateWaiting) {
		q.Add(req)
	}
}

// unfinished returns the runs of o's namespace that are not completed.
func (r *Reconciler) unfinished(ctx context.Context, o client.Object) []reconcile.Request {
	return kernel.Listed(ctx, r.Client, &as.PromotionRunList{}, func(run *as.PromotionRun) bool {
		return run.Status.State != as.PromotionRunStateCompleted
	}, client.InNamespace(o.GetNamespace()))
}

// runsOf returns the runs of an application in a namespace that are in state.
func (r *Reconciler) runsOf(ctx context.Context, namespace, application string, state as.PromotionRunState) []reconcile.Request {
	return kernel.Listed(ctx, r.Client, &as.PromotionRunList{}, func(run *as.PromotionRun) bool {
		return run.Spec.Application == application && run.Status.State == state
	}, client.InNamespace(namespace))
}
