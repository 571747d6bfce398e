// Package tenant reconciles per tenant namespace: its AppProject is updated and
// removed once unused, and its Argo CD RBAC policy follows the tenant mapping.
// The projects themselves are written by reconcilers/tenantproject.
package tenant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// Reconciler keeps the AppProject of each tenant namespace in line with the
// tenant's Applications and deletes it once none is left. It never creates a
// project: the reconcilers do, through Projects.Ensure, once a CR is valid.
// Requests are keyed by tenant namespace name.
type Reconciler struct {
	Projects *tenantproject.Projects
}

// Reconcile handles one tenant namespace. Not the kernel's full shape: a
// namespace is not our CR, so there is no finalizer and no status to patch
// (the CRs of the tenant carry the conditions); what it finds still goes
// through the kernel's Outcome.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return kernel.Outcome(ctrl.Result{}, r.reconcileNormal(ctx, req.Name))
}

func (r *Reconciler) reconcileNormal(ctx context.Context, tenantNS string) error {
	// First of all: the old tenant's project lets nothing sync any more.
	if err := r.fenceStale(ctx, tenantNS); err != nil {
		return err
	}
	apps, err := r.Projects.Applications(ctx, tenantNS)
	if err != nil {
		return err
	}
	sets, err := r.Projects.ApplicationSets(ctx, tenantNS)
	if err != nil {
		return err
	}
	if len(apps) == 0 && len(sets) == 0 {
		return r.deleteUnused(ctx, tenantNS)
	}
	ns := &corev1.Namespace{}
	if err := r.Projects.Client.Get(ctx, types.NamespacedName{Name: tenantNS}, ns); err != nil {
		// A deleted namespace's Applications go with its CRs; nothing to keep in line.
		return client.IgnoreNotFound(err)
	}
	_, err = r.Projects.Ensure(ctx, tenantNS)
	if errors.Is(err, tenantproject.ErrTenantGone) {
		// Fenced above; its deletion waits for the old Applications (deleteUnused).
		return nil
	}
	if errors.Is(err, kernel.ErrNotOurs) {
		// The CRs of the tenant carry the condition and look again; the
		// admin's removal of the squatter is not ours to wait for here.
		return nil
	}
	return err
}

// fenceStale fences the projects of the tenant namespace's name whose
// namespace is being deleted, gone or re-created (another UID): the old
// tenant's Applications and ApplicationSets outlive the namespace while their
// finalizers run, and their destination is the name (issue 33, item 5).
func (r *Reconciler) fenceStale(ctx context.Context, tenantNS string) error {
	var live *corev1.Namespace
	ns := &corev1.Namespace{}
	if err := r.Projects.Client.Get(ctx, types.NamespacedName{Name: tenantNS}, ns); err == nil {
		live = ns
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	var projects argov1alpha1.AppProjectList
	if err := r.Projects.Client.List(ctx, &projects, client.InNamespace(r.Projects.ArgoNamespace),
		client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: tenantNS, ownership.LabelOwnerKind: ownership.KindTenant}); err != nil {
		return err
	}
	for i := range projects.Items {
		if p := &projects.Items[i]; tenantproject.Stale(p, live) {
			if err := r.Projects.Fence(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// expired are the tenant's projects (ours, named for the namespace UID they
// are labelled with, not being deleted) whose grace period is over at now,
// and how long until the next one's is.
func expired(projects []argov1alpha1.AppProject, grace time.Duration, now time.Time) ([]*argov1alpha1.AppProject, time.Duration) {
	var unused []*argov1alpha1.AppProject
	var wait time.Duration
	for i := range projects {
		p := &projects[i]
		if p.Name != argocd.ProjectName(p.Labels[ownership.LabelOwnerUID]) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if left := grace - now.Sub(p.CreationTimestamp.Time); left > 0 {
			wait = max(wait, left)
			continue
		}
		unused = append(unused, p)
	}
	return unused, wait
}

// deleteUnused deletes the tenant's AppProjects once the cache shows no
// Application or ApplicationSet of the tenant. The cache may lag behind a
// reconciler that has just made the project and is writing its first
// Application, so a project is deleted only after its grace period and when a
// fresh, complete list from the API server shows nothing of the tenant either.
func (r *Reconciler) deleteUnused(ctx context.Context, tenantNS string) error {
	c := r.Projects.Client
	inArgo := client.InNamespace(r.Projects.ArgoNamespace)
	ofTenant := client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: tenantNS}
	var projects argov1alpha1.AppProjectList
	if err := c.List(ctx, &projects, inArgo, ofTenant, client.MatchingLabels{ownership.LabelOwnerKind: ownership.KindTenant}); err != nil {
		return err
	}
	unused, wait := expired(projects.Items, cmp.Or(r.Projects.Grace, tenantproject.DefaultGrace), time.Now())
	var graceOver error
	if wait > 0 {
		graceOver = kernel.Wait("GracePeriod", wait, "the grace period of the tenant's AppProject")
	}
	if len(unused) == 0 {
		return graceOver
	}
	// Fresh and complete (no cache, no pages): every Application and
	// ApplicationSet labelled for the tenant.
	var apps argov1alpha1.ApplicationList
	if err := r.Projects.APIReader.List(ctx, &apps, inArgo, ofTenant); err != nil {
		return fmt.Errorf("listing Applications of tenant %s: %w", tenantNS, err)
	}
	var sets argov1alpha1.ApplicationSetList
	if err := r.Projects.APIReader.List(ctx, &sets, inArgo, ofTenant); err != nil {
		return fmt.Errorf("listing ApplicationSets of tenant %s: %w", tenantNS, err)
	}
	for _, s := range sets.Items {
		if ownership.IsOwnedBy(s.Labels, ownership.KindBinding, s.Labels[ownership.LabelOwnerUID]) {
			// Its Applications use the tenant's project (a template parameter).
			return nil
		}
	}
	for _, p := range unused {
		// Its name is the project of the namespace UID it is labelled with (above).
		if len(tenantproject.Made(apps.Items, tenantNS, p.Labels[ownership.LabelOwnerUID])) > 0 {
			continue
		}
		left, err := r.Projects.Delete(ctx, p)
		if err != nil {
			return err
		}
		if left > 0 && graceOver == nil {
			graceOver = kernel.Wait("GracePeriod", left, "the grace period of the tenant's AppProject")
		}
	}
	return graceOver
}

// SetupWithManager watches the objects that change what a tenant needs (one
// worker, whatever the concurrency).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, _ int) error {
	if err := tenantproject.IndexApplications(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	byTenantLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if ns := o.GetLabels()[ownership.LabelTenantNS]; ns != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ns}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		Watches(&argov1alpha1.AppProject{}, byTenantLabel).
		Watches(&argov1alpha1.ApplicationSet{}, byTenantLabel).
		// A ManagedEnvironment connecting or failing changes the destinations.
		Watches(&v1.GitOpsDeploymentManagedEnvironment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
		})).
		// Not on creates: the reconciler that writes an Application has put its
		// repository into the project first (Projects.Ensure), and Argo CD's
		// generated ones use their ApplicationSet's, watched above. At N=10,000
		// the creates kept this one-worker reconciler recomputing projects
		// from every Application of the tenant (issue 13).
		Watches(&argov1alpha1.Application{}, byTenantLabel,
			builder.WithPredicates(predicate.Or(specOrLabelsChanged(), deletes()))).
		// A tenant's credentials for an ssh repository other tenants named
		// without a key (or their removal, for the tenant itself, when
		// another holds some) take it out of those projects
		// (tenantproject.Access.Revoked).
		Watches(&v1.GitOpsDeploymentRepositoryCredentials{}, handler.EnqueueRequestsFromMapFunc(r.tenantsUsing)).
		// The platform admin changing the tenant mapping changes the project's role.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		}), builder.WithPredicates(predicate.Or(mappingChanged(), namespaceGoing()))).
		WithOptions(sharding.Sharded(ctx, &corev1.Namespace{}, controller.Options{})).
		Complete(r)
}

// tenantsUsing maps RepositoryCredentials to their own namespace and the
// tenants whose project allows their repository.
func (r *Reconciler) tenantsUsing(ctx context.Context, o client.Object) []reconcile.Request {
	repo := o.(*v1.GitOpsDeploymentRepositoryCredentials).Spec.Repository
	out := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	var projects argov1alpha1.AppProjectList
	if err := r.Projects.Client.List(ctx, &projects, client.InNamespace(r.Projects.ArgoNamespace),
		client.MatchingLabels{ownership.LabelOwnerKind: ownership.KindTenant}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing AppProjects for a watch mapping")
		return out
	}
	for _, p := range projects.Items {
		ns := p.Labels[ownership.LabelTenantNS]
		if ns != "" && ns != o.GetNamespace() && slices.ContainsFunc(p.Spec.SourceRepos, func(s string) bool { return argocd.SameRepository(s, repo) }) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ns}})
		}
	}
	return out
}

// mappingChanged passes updates of a namespace's tenant mapping annotation.
func mappingChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[argocd.AnnotationArgoCDSubjects] != e.ObjectNew.GetAnnotations()[argocd.AnnotationArgoCDSubjects]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// namespaceGoing passes a namespace's deletion: its start (the deletion
// timestamp set) and its end, when the old tenant's project is fenced.
func namespaceGoing() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// specOrLabelsChanged passes updates of an Application's spec or labels, all
// a tenant's project depends on. Not the generation: Applications have no
// status subresource, so each of the ~7 status writes of Argo CD's controller
// to a new Application bumps it, and each ran this reconciler (issue 13, peer).
func specOrLabelsChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*argov1alpha1.Application)
			cur, okNew := e.ObjectNew.(*argov1alpha1.Application)
			if !okOld || !okNew {
				return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
			}
			return !argocd.Equal(old.Spec, cur.Spec) || !argocd.Equal(old.Labels, cur.Labels)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// deletes passes only delete events.
func deletes() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
