// Package tenantproject keeps one Argo CD AppProject per tenant namespace: the fence that
// keeps a tenant's Applications inside its own namespace and its own clusters.
package tenantproject

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// Projects writes tenant AppProjects. It is the one writer of each: the
// reconcilers that need a tenant's project share one Projects and take turns
// per project, and each write is conditional on the version read, so no
// writer drops a repository another has just added (sourceRepos is an atomic
// list under server-side apply).
type Projects struct {
	Client client.Client
	// APIReader reads around the cache, which holds only AppProjects labelled
	// as ours: a squatted project is only visible through it.
	APIReader     client.Reader
	ArgoNamespace string
	// Grace is how long a new AppProject is kept even though no Application
	// uses it yet (its first Application is being written), and a repository
	// added for a caller though the cache shows no Application using it;
	// DefaultGrace when 0.
	Grace time.Duration
	// Access admits a repository into a tenant's project only when the
	// tenant can read it (nil admits any: tests of the project alone).
	Access *Access

	// writers holds a *writer per project name.
	writers sync.Map
}

// writer is what Projects knows of one project between passes.
type writer struct {
	sync.Mutex
	// known is the version of the project we last wrote or read from the API
	// server, last the project at that version (nil: not known).
	known string
	last  *argov1alpha1.AppProject
	// ours are the versions our last writes made: a cached project at one
	// of them, or none cached yet, is the cache behind our writes, and last
	// is the project (issue 38: without reading it around the cache). At any
	// other version it is read again around the cache.
	ours    []string
	pending pending
	// ensured is when a caller's Ensure (with repositories) last succeeded:
	// its Application may not exist yet.
	ensured time.Time
}

// DefaultGrace is Projects.Grace when unset.
const DefaultGrace = 30 * time.Second

// attempts bounds the retries of a write that conflicted with another's.
const attempts = 5

// Ensure makes the tenant's AppProject match what the tenant's Applications need,
// plus the repositories about to be used (repos), and returns its name. It writes
// nothing when the project is already right. Only callers that have validated a
// CR call it: a tenant with nothing valid gets no AppProject. With repos and an
// existing project, repositories it allows are kept rather than recomputed from
// every Application of the tenant (the tenant reconciler, which calls it without
// repos, drops unused ones). Once it returns, repos are in the project until an
// Application uses them or the grace ends.
func (p *Projects) Ensure(ctx context.Context, namespace string, repos ...string) (string, error) {
	ns := &corev1.Namespace{}
	if err := p.Client.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		return "", fmt.Errorf("reading tenant namespace %s: %w", namespace, err)
	}
	if !ns.DeletionTimestamp.IsZero() {
		// The tenant reconciler fences its project (fence.go).
		return "", fmt.Errorf("%w: %s", ErrTenantGone, namespace)
	}
	name := argocd.ProjectName(string(ns.UID))
	// Before the lock: a probe of a repository may take seconds.
	checked, err := p.admit(ctx, namespace, name, repos)
	if err != nil {
		return "", err
	}
	w := p.writer(name)
	w.Lock()
	defer w.Unlock()
	for i, fresh := 0, false; i < attempts; i, fresh = i+1, true {
		// A conflict: someone else wrote since we read; read again past the cache.
		if err = p.ensure(ctx, ns, w, fresh, repos, checked); !apierrors.IsConflict(err) && !errors.Is(err, kernel.ErrStaleCache) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if len(repos) > 0 {
		w.ensured = time.Now()
	}
	return name, nil
}

// admit returns a *NotReadableError when one of repos is new to the
// (cached) project and the tenant cannot read it, else the repositories it
// checked. A repository already in the project was admitted for this tenant
// before.
func (p *Projects) admit(ctx context.Context, namespace, name string, repos []string) (checked map[string]bool, err error) {
	if p.Access == nil || len(repos) == 0 {
		return nil, nil
	}
	var have []string
	current := &argov1alpha1.AppProject{}
	if err := p.Client.Get(ctx, types.NamespacedName{Namespace: p.ArgoNamespace, Name: name}, current); err == nil {
		have = current.Spec.SourceRepos
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading AppProject %s: %w", name, err)
	}
	checked = map[string]bool{}
	for _, repo := range repos {
		if slices.Contains(have, repo) {
			continue
		}
		if err := p.Access.Check(ctx, namespace, repo); err != nil {
			return nil, err
		}
		checked[repo] = true
	}
	return checked, nil
}

// unrevoked are repos less those the tenant may no longer read
// (Access.Revoked: nothing is asked over the network, so it runs under the
// project's lock).
func (p *Projects) unrevoked(ctx context.Context, namespace string, repos []string) ([]string, error) {
	if p.Access == nil {
		return repos, nil
	}
	var out []string
	for _, repo := range repos {
		gone, err := p.Access.Revoked(ctx, namespace, repo)
		if err != nil {
			return nil, err
		}
		if !gone {
			out = append(out, repo)
		}
	}
	return out, nil
}

// Delete deletes the tenant's project as the caller listed it (UID and
// version), under the project's lock, so no Ensure lands between the caller's
// check that it is unused and the delete. It does not delete, and returns how
// long until it may, while a caller's Ensure of it is younger than the grace
// (its Application may not be written yet); a project that changed since it
// was listed is left for the caller's next pass.
func (p *Projects) Delete(ctx context.Context, project *argov1alpha1.AppProject) (wait time.Duration, err error) {
	w := p.writer(project.Name)
	w.Lock()
	defer w.Unlock()
	if left := p.grace() - time.Since(w.ensured); left > 0 {
		return left, nil
	}
	err = p.Client.Delete(ctx, project, client.Preconditions{UID: &project.UID, ResourceVersion: &project.ResourceVersion})
	switch {
	case err == nil || apierrors.IsNotFound(err):
		w.forget()
	case !apierrors.IsConflict(err):
		return 0, fmt.Errorf("deleting AppProject %s: %w", project.Name, err)
	}
	return 0, nil
}

// wrote notes our write that made project (as stored).
func (w *writer) wrote(project *argov1alpha1.AppProject) {
	w.known, w.last = project.ResourceVersion, project
	if w.ours = append(w.ours, project.ResourceVersion); len(w.ours) > 8 {
		w.ours = slices.Delete(w.ours, 0, len(w.ours)-8)
	}
}

// forget notes the project deleted: the cache may still show it, so the
// next pass reads it around the cache.
func (w *writer) forget() {
	w.known, w.last, w.ours = "(deleted)", nil, nil
}

func (p *Projects) writer(name string) *writer {
	w, _ := p.writers.LoadOrStore(name, &writer{pending: pending{}})
	return w.(*writer)
}

// ensure is one read-decide-write pass of Ensure, under w's lock.
func (p *Projects) ensure(ctx context.Context, ns *corev1.Namespace, w *writer, fresh bool, repos []string, checked map[string]bool) error {
	key := types.NamespacedName{Namespace: p.ArgoNamespace, Name: argocd.ProjectName(string(ns.UID))}
	current, err := p.read(ctx, key, w, fresh)
	if err != nil {
		return err
	}
	ours := func(o client.Object) bool {
		return ownership.IsOwnedBy(o.GetLabels(), ownership.KindTenant, string(ns.UID))
	}
	var have []string
	exists := false
	if current != nil {
		if !ours(current) {
			return p.notOurs(key.Name, ns.Name)
		}
		if Fenced(current) {
			// Its namespace was seen being deleted: never open it again.
			return fmt.Errorf("%w: %s (AppProject %s is fenced)", ErrTenantGone, ns.Name, key.Name)
		}
		have, exists = current.Spec.SourceRepos, current.DeletionTimestamp.IsZero()
	}
	if p.Access != nil {
		// admit skipped what the cached project allowed; the project as read
		// here may no longer (the tenant's pass revoked it meanwhile).
		for _, r := range added(have, repos, exists) {
			if !checked[r] {
				if err := p.Access.Check(ctx, ns.Name, r); err != nil {
					return err
				}
			}
		}
	}
	var used []string
	now := time.Now()
	if recompute(exists, repos) {
		if used, err = p.used(ctx, ns.Name); err != nil {
			return err
		}
		w.pending.settle(used, now, p.grace())
	}
	allowed := sourceRepos(have, repos, exists, used, w.pending.list())
	if len(repos) == 0 {
		// The tenant's own pass: what the tenant may no longer read leaves,
		// though its Applications still name it.
		if allowed, err = p.unrevoked(ctx, ns.Name, allowed); err != nil {
			return err
		}
	}
	desired, err := p.build(ctx, ns, allowed)
	if err != nil {
		return err
	}
	err = kernel.Owned{Client: p.Client, APIReader: p.APIReader, Ours: ours, Locked: true}.Apply(ctx, current, desired)
	var foreign *kernel.NotOursError
	switch {
	case errors.As(err, &foreign):
		// Someone else's project under our name (not labelled as ours, so not cached).
		return p.notOurs(key.Name, ns.Name)
	case err != nil:
		return err
	}
	// Apply leaves desired as stored when it wrote, else as built (no version).
	switch {
	case desired.ResourceVersion != "":
		w.wrote(desired)
	case current != nil:
		w.known, w.last = current.ResourceVersion, current
	}
	w.pending.add(added(have, repos, exists), now)
	return nil
}

// read is the tenant's project, nil when there is none: from the cache when
// it shows the version we know; the one we last wrote while the cache shows
// an earlier write of ours or none; none when we know of none and the cache
// shows none (the create-only apply refuses an uncached one: a squatted
// project, or ours made elsewhere); else from the API server.
func (p *Projects) read(ctx context.Context, key types.NamespacedName, w *writer, fresh bool) (*argov1alpha1.AppProject, error) {
	current := &argov1alpha1.AppProject{}
	if !fresh {
		err := p.Client.Get(ctx, key, current)
		switch {
		case err == nil && (w.known == "" || current.ResourceVersion == w.known):
			return current, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading AppProject %s: %w", key.Name, err)
		case w.known == "":
			return nil, nil
		case w.last != nil && w.last.ResourceVersion == w.known && (err != nil || slices.Contains(w.ours, current.ResourceVersion)):
			return w.last.DeepCopy(), nil
		}
	}
	// Not cached (new, or someone else's) or behind our last write.
	if err := p.APIReader.Get(ctx, key, current); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading AppProject %s: %w", key.Name, err)
	}
	return current, nil
}

func (p *Projects) grace() time.Duration { return cmp.Or(p.Grace, DefaultGrace) }

// notOurs is Ensure's error when the tenant's AppProject name is taken by a
// project the GitOps Service did not create for this namespace: it is never
// used (its destinations could be anything), so nothing is deployed.
func (p *Projects) notOurs(name, namespace string) error {
	return &kernel.NotOursError{Kind: "AppProject", Namespace: p.ArgoNamespace, Name: name,
		Why: "for namespace " + namespace + " and is never used: nothing is deployed until the platform admin removes it"}
}

// used are the repositories of the tenant's existing Applications and ApplicationSets.
func (p *Projects) used(ctx context.Context, tenantNS string) ([]string, error) {
	apps, err := p.Applications(ctx, tenantNS)
	if err != nil {
		return nil, err
	}
	sets, err := p.ApplicationSets(ctx, tenantNS)
	if err != nil {
		return nil, err
	}
	var repos []string
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
	return repos, nil
}

// Build is the tenant's AppProject allowing repos as Ensure would write it
// now (destinations, resource lists, roles), without writing or reading it:
// what a preview checks a sync against. It needs only Client and ArgoNamespace.
func (p *Projects) Build(ctx context.Context, ns *corev1.Namespace, repos []string) (*argov1alpha1.AppProject, error) {
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

// Applications lists the Applications we made for the tenant's CRs. They
// share their maps and slices with the cache: read them, never change them.
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
	// Not deep-copied: each GitOpsDeployment's first reconcile and every
	// tenant reconcile lists all of the tenant's (issue 27: a large part of
	// a restarted sidecar's garbage), and the callers only read them.
	if err := p.Client.List(ctx, &apps, client.InNamespace(p.ArgoNamespace), client.MatchingFields{tenantIndex: tenantNS}, client.UnsafeDisableDeepCopy); err != nil {
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

// OwnerOf is the CR app was made for (a *GitOpsDeployment or a
// *SnapshotEnvironmentBinding), read through c: MadeFor with the UID of the
// namespace the labels name, and that namespace's CR of the labelled name
// with the labelled UID. Anything else is a *kernel.NotOursError; other
// errors are transient.
func OwnerOf(ctx context.Context, c client.Reader, app *argov1alpha1.Application) (client.Object, error) {
	notMade := func(why string) error {
		return &kernel.NotOursError{Kind: "Application", Namespace: app.Namespace, Name: app.Name, Why: why}
	}
	tenantNS := app.Labels[ownership.LabelTenantNS]
	if tenantNS == "" {
		return nil, notMade("for a tenant namespace (it names none)")
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: tenantNS}, ns); apierrors.IsNotFound(err) {
		return nil, notMade("for namespace " + tenantNS + ", which does not exist")
	} else if err != nil {
		return nil, err
	}
	kind, key, ok := MadeFor(app, ns.Name, string(ns.UID))
	if !ok {
		return nil, notMade("for a GitOpsDeployment or SnapshotEnvironmentBinding of namespace " + tenantNS)
	}
	var owner client.Object = &v1.GitOpsDeployment{}
	if kind == ownership.KindBinding {
		owner = &appstudiov1alpha1.SnapshotEnvironmentBinding{}
	}
	if err := c.Get(ctx, key, owner); apierrors.IsNotFound(err) {
		return nil, notMade("for " + kind + " " + key.String() + ", which does not exist")
	} else if err != nil {
		return nil, err
	}
	if uid := string(owner.GetUID()); uid == "" || uid != app.Labels[ownership.LabelOwnerUID] {
		return nil, notMade("for " + kind + " " + key.String() + " (it names another UID)")
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
