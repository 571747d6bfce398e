// Package gitopsdeployment reconciles GitOpsDeployments into Argo CD Applications
// and mirrors the Applications' state back into the GitOpsDeployments' status.
package gitopsdeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials,verbs=get;list;watch
// Argo CD objects are only ever written in the Argo CD namespace (a Role there;
// kustomize renames the namespace).
// +kubebuilder:rbac:groups=argoproj.io,resources=applications;appprojects,verbs=get;list;watch;create;update;patch;delete,namespace=argocd
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler reconciles GitOpsDeployments.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache, which only holds Argo CD objects we own.
	APIReader     client.Reader
	ArgoNamespace string
	Projects      *tenantproject.Projects
	Recorder      record.EventRecorder
	// Trees reads per-resource health where Argo CD 3.x keeps it; nil leaves
	// that health out.
	Trees argocd.ResourceTrees
	// AllowFileRepositories accepts file:// repository URLs (demos and tests only).
	AllowFileRepositories bool
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock

	// statusWrites: status diffs against the server's status while the cache
	// is behind our last write (set up by SetupWithManager).
	statusWrites *kernel.StatusWrites
}

// Reconcile brings one GitOpsDeployment's Application in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	gd := &v1.GitOpsDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, gd); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted without our finalizer: let go of the Application without
			// touching what it deployed.
			return ctrl.Result{}, r.deleteApplications(ctx, req.NamespacedName, ownership.AnyUID, false)
		}
		return ctrl.Result{}, err
	}
	if !gd.DeletionTimestamp.IsZero() {
		return kernel.Outcome(ctrl.Result{}, r.reconcileDelete(ctx, gd))
	}
	// The finalizer is the client's choice (cascading delete), never added
	// here. A CR deleted and recreated under the same name is a new
	// deployment: the old one's Application goes, without cascade.
	if err := r.deleteApplications(ctx, req.NamespacedName, ownership.OtherUID(gd.UID), false); err != nil {
		return ctrl.Result{}, err
	}
	patcher := kernel.NewStatusPatcher(r.Client, gd).Remembering(r.statusWrites)
	defer patcher.Patch(ctx, gd, &err)
	gd.Status.ObservedGeneration = gd.Generation
	app, env, err := r.reconcileNormal(ctx, gd)
	if kernel.Transient(err) {
		// The status stays as it was until the retry.
		return kernel.Outcome(ctrl.Result{}, err)
	}
	refusal := kernel.AsRefusal(err)
	r.setStatus(ctx, gd, app, env, refusal)
	kernel.SetGitOpsReady(&gd.Status.Conditions, err, readiness(app != nil, gd.Spec.Type == v1.GitOpsDeploymentSpecTypeManual, gd.Status), r.Now.Now())
	var result ctrl.Result
	if app != nil && r.Trees != nil && argocd.HealthInTree(app) && app.Status.Health.Status != health.HealthStatusHealthy {
		// Per-resource health kept only in Argo CD's resource tree changes
		// without an Application event: look again while not Healthy (once
		// Healthy, any resource's change changes the Application's health).
		result.RequeueAfter = kernel.UnwatchedRecheck
	}
	return kernel.Outcome(result, err)
}

// reconcileNormal writes the Application. It returns the Application as now
// known (also with a refusal, when one exists that is ours), the
// ManagedEnvironment the deployment names (read once per pass, for the status
// too), and a *kernel.Refusal when the spec cannot be deployed (then nothing
// is written).
func (r *Reconciler) reconcileNormal(ctx context.Context, gd *v1.GitOpsDeployment) (*argov1alpha1.Application, *v1.GitOpsDeploymentManagedEnvironment, error) {
	current, err := r.currentApplication(ctx, gd)
	if err != nil {
		// Never touch an object someone else made, even under our name.
		return nil, nil, err
	}
	env, err := r.environment(ctx, gd)
	if err != nil {
		return current, nil, err
	}
	if refusal := check(gd, r.AllowFileRepositories); refusal != nil {
		return current, env, refusal
	}
	target, refusal := target(gd, env)
	if refusal != nil {
		return current, env, refusal
	}
	if target.Project, err = r.Projects.Ensure(ctx, gd.Namespace, gd.Spec.Source.RepoURL); err != nil {
		if errors.Is(err, kernel.ErrNotOurs) {
			// A squatted AppProject is not watched (not ours): look again
			// for the admin's removal of it.
			return current, env, refuse(ReasonAppProjectNotOurs, "%s", err.Error()).Retry(kernel.UnwatchedRecheck)
		}
		var unreadable *tenantproject.NotReadableError
		if errors.As(err, &unreadable) {
			// The namespace's RepositoryCredentials are watched; a repository
			// made public, or reachable again, is not.
			return current, env, refuse(ReasonRepositoryNotReadable, "%s", err.Error()).Retry(kernel.UnwatchedRecheck)
		}
		return current, env, err
	}
	app := argocd.Application(r.ArgoNamespace, gd, target)
	err = r.owned(gd).Apply(ctx, current, app)
	var notOurs *kernel.NotOursError
	if errors.As(err, &notOurs) {
		return nil, env, collision(app.Namespace+"/"+app.Name, gd)
	}
	if err != nil {
		return nil, env, err
	}
	if current != nil && app.ResourceVersion == "" {
		// Nothing was written: the cached Application is current.
		return current, env, nil
	}
	return app, env, nil
}

// environment reads the ManagedEnvironment the deployment names, nil when it
// names none or it does not exist.
func (r *Reconciler) environment(ctx context.Context, gd *v1.GitOpsDeployment) (*v1.GitOpsDeploymentManagedEnvironment, error) {
	name := gd.Spec.Destination.Environment
	if name == "" {
		return nil, nil
	}
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: gd.Namespace, Name: name}, env); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return env, nil
}

// owned writes the Applications of gd.
func (r *Reconciler) owned(gd *v1.GitOpsDeployment) kernel.Owned {
	return kernel.Owned{Client: r.Client, APIReader: r.APIReader, Ours: func(o client.Object) bool {
		return ownership.IsOwnedBy(o.GetLabels(), ownership.KindGitOpsDeployment, string(gd.UID))
	}}
}

func collision(name string, gd *v1.GitOpsDeployment) *kernel.Refusal {
	return refuse(ReasonApplicationNameCollision, "name collision: Argo CD Application %s exists and was not created for GitOpsDeployment %s/%s", name, gd.Namespace, gd.Name)
}

// currentApplication returns the GitOpsDeployment's Application from the
// cache, or nil; one of our name that is not ours is a refusal.
func (r *Reconciler) currentApplication(ctx context.Context, gd *v1.GitOpsDeployment) (*argov1alpha1.Application, error) {
	app := &argov1alpha1.Application{}
	key := types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ApplicationName(string(gd.UID))}
	if err := r.Client.Get(ctx, key, app); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: gd.Namespace}, tenant); err != nil {
		return nil, err
	}
	// Our labels in another project are a look-alike's: never written.
	if !tenantproject.MadeForOwner(app, ownership.KindGitOpsDeployment, string(gd.UID), gd.Namespace, string(tenant.UID)) {
		return nil, collision(key.String(), gd)
	}
	return app, nil
}

// setStatus computes the new status from the Application and the refusal, if any.
func (r *Reconciler) setStatus(ctx context.Context, gd *v1.GitOpsDeployment, app *argov1alpha1.Application, env *v1.GitOpsDeploymentManagedEnvironment, refusal *kernel.Refusal) {
	now := r.Now.Now()
	kernel.SetError(r.Recorder, gd, &gd.Status.Conditions, refusal, now)
	if app == nil {
		notReadable(gd, refusal, now)
		return
	}
	mirrored := argocd.MirrorStatus(app, serverNames(gd, env), r.resourceTree(ctx, app))
	gd.Status.Sync = mirrored.Sync
	gd.Status.Health = mirrored.Health
	gd.Status.Resources = mirrored.Resources
	gd.Status.ReconciledState = mirrored.ReconciledState
	gd.Status.OperationState = mirrored.OperationState
	gd.Status.Conditions = mirrorAppConditions(gd.Status.Conditions, mirrored.Conditions, now)
	notReadable(gd, refusal, now)
}

// notReadable also reports a repository the tenant cannot read as the
// ComparisonError Argo CD reports for one it cannot fetch: Argo CD is not
// asked (the repository is kept out of the tenant's project), and users and
// tools wait for the condition Argo CD would have set.
func notReadable(gd *v1.GitOpsDeployment, refusal *kernel.Refusal, now metav1.Time) {
	if refusal != nil && refusal.Reason == ReasonRepositoryNotReadable {
		gd.Status.Conditions = v1.SetCondition(gd.Status.Conditions, v1.GitOpsDeploymentConditionComparisonError,
			v1.GitOpsConditionStatusTrue, v1.GitOpsConditionReason(v1.GitOpsDeploymentConditionComparisonError), refusal.Message, now)
	}
}

// resourceTree returns the Application's resource tree when Argo CD keeps the
// per-resource health only there, else nil. Unreadable is logged, not fatal:
// the rest of the status is still right, and the recheck tries again.
func (r *Reconciler) resourceTree(ctx context.Context, app *argov1alpha1.Application) *argov1alpha1.ApplicationTree {
	if r.Trees == nil || !argocd.HealthInTree(app) {
		return nil
	}
	tree, err := r.Trees.ResourceTree(ctx, app.Name)
	if err != nil {
		log.FromContext(ctx).Error(err, "per-resource health unavailable")
		return nil
	}
	return tree
}

// serverNames maps the deployment's environment's server URL back to its name.
func serverNames(gd *v1.GitOpsDeployment, env *v1.GitOpsDeploymentManagedEnvironment) argocd.ServerNames {
	names := argocd.ServerNames{argocd.LocalServer: ""}
	if env != nil {
		names[argocd.ClusterServer(env.Spec.APIURL, string(env.UID))] = gd.Spec.Destination.Environment
	}
	return names
}

// reconcileDelete runs when a GitOpsDeployment is being deleted. With our
// finalizer the Application is deleted with cascade (Argo CD removes the
// deployed resources) and the finalizer goes only once the Application is gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, gd *v1.GitOpsDeployment) error {
	if !controllerutil.ContainsFinalizer(gd, v1.FinalizerResourcesFinalizer) {
		return r.deleteApplications(ctx, client.ObjectKeyFromObject(gd), ownership.AnyUID, false)
	}
	remaining, err := r.applications(ctx, client.ObjectKeyFromObject(gd), ownership.SameUID(gd.UID))
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		if err := r.deleteApplications(ctx, client.ObjectKeyFromObject(gd), ownership.SameUID(gd.UID), true); err != nil {
			return err
		}
		// The Application's delete event usually comes first.
		return kernel.Wait("DeletingApplication", kernel.PollInterval, "the deletion of the Application")
	}
	return kernel.RemoveFinalizer(ctx, r.Client, gd, v1.FinalizerResourcesFinalizer)
}

// applications lists the Applications made for the GitOpsDeployment key whose
// owner UID satisfies match.
func (r *Reconciler) applications(ctx context.Context, key types.NamespacedName, match func(uid types.UID) bool) ([]argov1alpha1.Application, error) {
	var apps argov1alpha1.ApplicationList
	// Not deep-copied (every reconcile lists, mostly to find nothing to
	// delete): only the Applications returned are copied.
	if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingFields{ownerIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Applications of %s: %w", key, err)
	}
	if len(apps.Items) == 0 {
		return nil, nil
	}
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: key.Namespace}, tenant); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	var out []argov1alpha1.Application
	for i := range apps.Items {
		app := &apps.Items[i]
		uid := types.UID(app.Labels[ownership.LabelOwnerUID])
		if !ownership.IsOwnedBy(app.Labels, ownership.KindGitOpsDeployment, string(uid)) || !match(uid) {
			continue
		}
		// Only in the tenant's project (a look-alike elsewhere is never
		// deleted); once the namespace is gone, in a tenant project at all
		// (only that tenant or the admin may create one there).
		if _, _, ok := tenantproject.MadeFor(app, key.Namespace, string(tenant.UID)); ok ||
			(tenant.UID == "" && strings.HasPrefix(app.Spec.Project, argocd.ProjectName(""))) {
			out = append(out, *app.DeepCopy())
		}
	}
	return out, nil
}

// deleteApplications deletes the Applications of key whose owner UID satisfies
// match. With cascade, Argo CD first deletes the resources they deployed.
func (r *Reconciler) deleteApplications(ctx context.Context, key types.NamespacedName, match func(types.UID) bool, cascade bool) error {
	apps, err := r.applications(ctx, key, match)
	if err != nil {
		return err
	}
	for i := range apps {
		app := &apps[i]
		if cascade {
			if err := kernel.AddFinalizer(ctx, r.Client, app, argov1alpha1.ResourcesFinalizerName); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return err
			}
		}
		if !app.DeletionTimestamp.IsZero() {
			continue
		}
		// Delete exactly the object we listed (UID precondition), nothing newer.
		if err := r.Client.Delete(ctx, app, client.Preconditions{UID: &app.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Application %s: %w", app.Name, err)
		}
	}
	return nil
}
