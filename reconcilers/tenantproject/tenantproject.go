// Package tenantproject keeps one Argo CD AppProject per tenant namespace: the fence that
// keeps a tenant's Applications inside its own namespace and its own clusters.
package tenantproject

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// ErrNotOurs is returned by Ensure when the tenant's AppProject name is taken by
// a project the GitOps Service did not create for this namespace: it is never
// used (its destinations could be anything), so nothing is deployed.
var ErrNotOurs = errors.New("AppProject name taken")

// Projects writes tenant AppProjects.
type Projects struct {
	Client client.Client
	// APIReader reads around the cache, which holds only AppProjects labelled
	// as ours: a squatted project is only visible through it.
	APIReader     client.Reader
	ArgoNamespace string
	// Grace is how long a new AppProject is kept even though no Application
	// uses it yet (its first Application is being written); DefaultGrace when 0.
	Grace time.Duration
}

// DefaultGrace is Projects.Grace when unset.
const DefaultGrace = 30 * time.Second

// Ensure makes the tenant's AppProject match what the tenant's Applications need,
// plus the repositories about to be used (repos), and returns its name. It writes
// nothing when the project is already right. Only callers that have validated a
// CR call it: a tenant with nothing valid gets no AppProject. With repos and an
// existing project, repositories it allows are kept rather than recomputed from
// every Application of the tenant (the tenant reconciler, which calls it without
// repos, drops unused ones).
func (p *Projects) Ensure(ctx context.Context, namespace string, repos ...string) (string, error) {
	ns := &corev1.Namespace{}
	if err := p.Client.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		return "", fmt.Errorf("reading tenant namespace %s: %w", namespace, err)
	}
	name := argocd.ProjectName(string(ns.UID))
	current := &argov1alpha1.AppProject{}
	var cur client.Object = current
	if err := p.Client.Get(ctx, types.NamespacedName{Namespace: p.ArgoNamespace, Name: name}, current); apierrors.IsNotFound(err) {
		cur = nil
	} else if err != nil {
		return "", fmt.Errorf("reading AppProject %s: %w", name, err)
	} else if !ownership.IsOwnedBy(current.Labels, ownership.KindTenant, string(ns.UID)) {
		return "", p.notOurs(name, namespace)
	}
	var desired *argov1alpha1.AppProject
	var err error
	if cur != nil && len(repos) > 0 && current.DeletionTimestamp.IsZero() {
		// A reconciler adding its CR's repositories to the tenant's project:
		// the repositories it already allows stay, and the tenant reconciler,
		// which runs on every change of the tenant's Applications,
		// ApplicationSets, ManagedEnvironments and namespace, drops those no
		// longer used. Listing every Application of the tenant here made each
		// reconcile cost O(the tenant's Applications) (issue 13, N=10,000).
		desired, err = p.build(ctx, ns, append(append([]string(nil), current.Spec.SourceRepos...), repos...))
	} else {
		desired, err = p.desired(ctx, ns, repos)
	}
	if err != nil {
		return "", err
	}
	owned := kernel.Owned{Client: p.Client, APIReader: p.APIReader, Ours: func(o client.Object) bool {
		return ownership.IsOwnedBy(o.GetLabels(), ownership.KindTenant, string(ns.UID))
	}}
	// Ours but not cached yet: our own write, the cache catches up.
	err = owned.Apply(ctx, cur, desired)
	var foreign *kernel.NotOursError
	switch {
	case errors.As(err, &foreign):
		// Someone else's project under our name (not labelled as ours, so not cached).
		return "", p.notOurs(desired.Name, namespace)
	case err != nil && !errors.Is(err, kernel.ErrStaleCache):
		return "", err
	}
	return desired.Name, nil
}

func (p *Projects) notOurs(name, namespace string) error {
	return fmt.Errorf("%w: the Argo CD AppProject %s/%s was not created by the GitOps Service for namespace %s and is never used: nothing is deployed until the platform admin removes it",
		ErrNotOurs, p.ArgoNamespace, name, namespace)
}

// desired is the tenant's AppProject: the repositories of the tenant's existing
// Applications plus extraRepos.
func (p *Projects) desired(ctx context.Context, ns *corev1.Namespace, extraRepos []string) (*argov1alpha1.AppProject, error) {
	apps, err := p.Applications(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	sets, err := p.ApplicationSets(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	repos := append([]string(nil), extraRepos...)
	for i := range apps {
		if src := apps[i].Spec.Source; src != nil {
			repos = append(repos, src.RepoURL)
		}
	}
	for i := range sets {
		if r := sets[i].Annotations[argocd.AnnotationRepositories]; r != "" {
			repos = append(repos, strings.Split(r, ",")...)
		}
	}
	return p.build(ctx, ns, repos)
}

// build is the tenant's AppProject allowing repos, with the destinations of
// its connected ManagedEnvironments and the roles of its mapped subjects.
func (p *Projects) build(ctx context.Context, ns *corev1.Namespace, repos []string) (*argov1alpha1.AppProject, error) {
	t := argocd.Tenant{Namespace: ns.Name, UID: string(ns.UID), Repos: repos}
	// Invalid entries are reported by the RBAC policy reconciler.
	t.Subjects, _ = argocd.ParseSubjects(ns.Annotations[argocd.AnnotationArgoCDSubjects])
	var err error
	if t.Destinations, err = p.destinations(ctx, ns.Name); err != nil {
		return nil, err
	}
	return argocd.AppProject(p.ArgoNamespace, t), nil
}

// destinations are the clusters of the tenant's connected ManagedEnvironments:
// each of their namespaces, or all ("*") for a cluster-wide environment. An
// environment counts only while its condition is True for its current spec.
func (p *Projects) destinations(ctx context.Context, tenantNS string) ([]argocd.Destination, error) {
	var envs v1.GitOpsDeploymentManagedEnvironmentList
	if err := p.Client.List(ctx, &envs, client.InNamespace(tenantNS)); err != nil {
		return nil, fmt.Errorf("listing ManagedEnvironments of tenant %s: %w", tenantNS, err)
	}
	var out []argocd.Destination
	for i := range envs.Items {
		env := &envs.Items[i]
		c := meta.FindStatusCondition(env.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded)
		if !env.DeletionTimestamp.IsZero() || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != env.Generation {
			continue
		}
		server := argocd.ClusterServer(env.Spec.APIURL, string(env.UID))
		if len(env.Spec.Namespaces) == 0 {
			out = append(out, argocd.Destination{Server: server, Namespace: "*"})
		}
		for _, ns := range argocd.ClusterNamespaces(env.Spec.Namespaces) {
			out = append(out, argocd.Destination{Server: server, Namespace: ns})
		}
	}
	return out, nil
}

// ApplicationSets lists the ApplicationSets we made for the tenant's bindings
// (a handful per tenant, so a label selection is cheap).
func (p *Projects) ApplicationSets(ctx context.Context, tenantNS string) ([]argov1alpha1.ApplicationSet, error) {
	var sets argov1alpha1.ApplicationSetList
	if err := p.Client.List(ctx, &sets, client.InNamespace(p.ArgoNamespace),
		client.MatchingLabels{ownership.LabelManagedBy: ownership.ManagedByValue, ownership.LabelTenantNS: tenantNS}); err != nil {
		return nil, fmt.Errorf("listing ApplicationSets of tenant %s: %w", tenantNS, err)
	}
	return sets.Items, nil
}

// Applications lists the Applications we made for the tenant's CRs.
func (p *Projects) Applications(ctx context.Context, tenantNS string) ([]argov1alpha1.Application, error) {
	ns := &corev1.Namespace{}
	if err := p.Client.Get(ctx, types.NamespacedName{Name: tenantNS}, ns); apierrors.IsNotFound(err) {
		// No project of a namespace that is gone is used again: none is ours to keep.
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading tenant namespace %s: %w", tenantNS, err)
	}
	var apps argov1alpha1.ApplicationList
	// An index, not a label selector: the cache would scan every Application.
	if err := p.Client.List(ctx, &apps, client.InNamespace(p.ArgoNamespace), client.MatchingFields{tenantIndex: tenantNS}); err != nil {
		return nil, fmt.Errorf("listing Applications of tenant %s: %w", tenantNS, err)
	}
	return Made(apps.Items, tenantNS, string(ns.UID)), nil
}

// Made keeps the Applications we made for the CRs of tenant namespace
// tenantNS (with UID tenantUID), as MadeFor says. Look-alikes neither widen
// a tenant's project nor keep it alive.
func Made(apps []argov1alpha1.Application, tenantNS, tenantUID string) []argov1alpha1.Application {
	var out []argov1alpha1.Application
	for i := range apps {
		if _, _, ok := MadeFor(&apps[i], tenantNS, tenantUID); ok {
			out = append(out, apps[i])
		}
	}
	return out
}

// ByOwner keeps the Applications we made for the CR of kind with UID
// ownerUID in tenant namespace tenantNS (UID tenantUID), as MadeForOwner says.
func ByOwner(apps []argov1alpha1.Application, kind, ownerUID, tenantNS, tenantUID string) []argov1alpha1.Application {
	var out []argov1alpha1.Application
	for i := range apps {
		if MadeForOwner(&apps[i], kind, ownerUID, tenantNS, tenantUID) {
			out = append(out, apps[i])
		}
	}
	return out
}

// MadeForOwner says whether app is one we made (MadeFor) for the CR of kind
// with UID ownerUID in tenant namespace tenantNS (UID tenantUID).
func MadeForOwner(app *argov1alpha1.Application, kind, ownerUID, tenantNS, tenantUID string) bool {
	_, _, ok := MadeFor(app, tenantNS, tenantUID)
	return ok && ownership.IsOwnedBy(app.Labels, kind, ownerUID)
}

// MadeFor says whether app is an Application we made for a CR of tenant
// namespace tenantNS (UID tenantUID), and for which: a GitOpsDeployment's, or
// generated for a SnapshotEnvironmentBinding. Our labels and annotation must
// name a CR of that namespace, and the Application must be in that tenant's
// own project. Labels are forged by anyone who may create an Application in
// any project; the tenant's project takes the Argo CD rights of that tenant
// (or the admin's), so only it ties the labels to the tenant. Callers that
// trust what the Application says of its owner (UID) also read the owner
// (OwnerOf).
func MadeFor(app *argov1alpha1.Application, tenantNS, tenantUID string) (kind string, owner types.NamespacedName, ok bool) {
	if tenantNS == "" || tenantUID == "" || app.Spec.Project != argocd.ProjectName(tenantUID) || app.Labels[ownership.LabelTenantNS] != tenantNS {
		return "", types.NamespacedName{}, false
	}
	for _, kind := range []string{ownership.KindGitOpsDeployment, ownership.KindBinding} {
		if owner, ok := ownership.Owner(app, kind); ok && owner.Namespace == tenantNS {
			return kind, owner, true
		}
	}
	return "", types.NamespacedName{}, false
}

// ErrNotMade: an Application is not one we made for a CR that still exists.
var ErrNotMade = errors.New("not an Application of the GitOps Service")

// OwnerOf is the CR app was made for (a *GitOpsDeployment or a
// *SnapshotEnvironmentBinding), read through c: MadeFor with the UID of the
// namespace the labels name, and that namespace's CR of the labelled name
// with the labelled UID. Anything else is ErrNotMade; other errors are
// transient.
func OwnerOf(ctx context.Context, c client.Reader, app *argov1alpha1.Application) (client.Object, error) {
	tenantNS := app.Labels[ownership.LabelTenantNS]
	if tenantNS == "" {
		return nil, ErrNotMade
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: tenantNS}, ns); apierrors.IsNotFound(err) {
		return nil, ErrNotMade
	} else if err != nil {
		return nil, err
	}
	kind, key, ok := MadeFor(app, ns.Name, string(ns.UID))
	if !ok {
		return nil, ErrNotMade
	}
	var owner client.Object = &v1.GitOpsDeployment{}
	if kind == ownership.KindBinding {
		owner = &appstudiov1alpha1.SnapshotEnvironmentBinding{}
	}
	if err := c.Get(ctx, key, owner); apierrors.IsNotFound(err) {
		return nil, ErrNotMade
	} else if err != nil {
		return nil, err
	}
	if uid := string(owner.GetUID()); uid == "" || uid != app.Labels[ownership.LabelOwnerUID] {
		return nil, ErrNotMade
	}
	return owner, nil
}

// tenantIndex indexes our Applications by tenant namespace.
const tenantIndex = "tenant.namespace"

// IndexApplications registers the index Applications reads (once per manager).
func IndexApplications(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &argov1alpha1.Application{}, tenantIndex, func(o client.Object) []string {
		if l := o.GetLabels(); l[ownership.LabelManagedBy] == ownership.ManagedByValue && l[ownership.LabelTenantNS] != "" {
			return []string{l[ownership.LabelTenantNS]}
		}
		return nil
	})
}
