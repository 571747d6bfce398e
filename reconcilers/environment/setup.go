package environment

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

// SetupWithManager registers the reconciler and its watches: Environments and
// the ManagedEnvironments they control. Tenant Secrets are not cached or
// watched (see extension/sidecar): the credentials Secret is compared with its
// copy every RecheckInterval instead.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.Now == nil {
		r.Now = metav1.Now
	}
	if r.RecheckInterval == 0 {
		r.RecheckInterval = DefaultRecheckInterval
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	// Status writes (ours, and the ManagedEnvironment reconciler's) need no
	// other look; deletes always pass.
	specOrMeta := builder.WithPredicates(predicate.Or(
		predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	return ctrl.NewControllerManagedBy(mgr).
		Named("environment").
		For(&as.Environment{}, specOrMeta).
		// A ManagedEnvironment of ours edited or deleted by someone else is put back.
		Watches(&v1.GitOpsDeploymentManagedEnvironment{},
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &as.Environment{}, handler.OnlyControllerOwner()),
			specOrMeta).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}
