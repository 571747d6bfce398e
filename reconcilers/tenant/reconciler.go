package tenant

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	managedgitopsv1alpha1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// Reconciler keeps the AppProject of each tenant namespace up to date and deletes
// it once the tenant has no GitOpsDeployment and no Application left.
// Requests are keyed by tenant namespace name.
type Reconciler struct {
	Projects *Projects
}

// Reconcile handles one tenant namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := r.Projects.Client
	tenantNS := req.Name
	var deployments managedgitopsv1alpha1.GitOpsDeploymentList
	if err := c.List(ctx, &deployments, client.InNamespace(tenantNS)); err != nil {
		return ctrl.Result{}, err
	}
	ns := &corev1.Namespace{}
	err := c.Get(ctx, types.NamespacedName{Name: tenantNS}, ns)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if len(deployments.Items) > 0 && err == nil && ns.DeletionTimestamp.IsZero() {
		_, err := r.Projects.Ensure(ctx, tenantNS)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.deleteUnused(ctx, tenantNS)
}

// deleteUnused deletes the tenant's AppProjects that no Application uses any more.
func (r *Reconciler) deleteUnused(ctx context.Context, tenantNS string) error {
	c := r.Projects.Client
	inArgo := client.InNamespace(r.Projects.ArgoNamespace)
	ofTenant := client.MatchingLabels{argocd.LabelManagedBy: argocd.ManagedByValue, argocd.LabelTenantNS: tenantNS}
	var apps argov1alpha1.ApplicationList
	if err := c.List(ctx, &apps, inArgo, ofTenant); err != nil {
		return err
	}
	var projects argov1alpha1.AppProjectList
	if err := c.List(ctx, &projects, inArgo, ofTenant, client.MatchingLabels{argocd.LabelOwnerKind: argocd.OwnerKindTenant}); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, a := range apps.Items {
		used[a.Spec.Project] = true
	}
	for i := range projects.Items {
		p := &projects.Items[i]
		if used[p.Name] || p.Name != argocd.ProjectName(p.Labels[argocd.LabelOwnerUID]) {
			continue
		}
		if err := c.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting AppProject %s: %w", p.Name, err)
		}
	}
	return nil
}

// SetupWithManager watches the objects that change what a tenant needs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	})
	byTenantLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if ns := o.GetLabels()[argocd.LabelTenantNS]; ns != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ns}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		Watches(&managedgitopsv1alpha1.GitOpsDeployment{}, byNamespace,
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletes()))).
		Watches(&argov1alpha1.AppProject{}, byTenantLabel).
		Watches(&argov1alpha1.Application{}, byTenantLabel, builder.WithPredicates(deletes())).
		Complete(r)
}

// deletes passes only delete events.
func deletes() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
