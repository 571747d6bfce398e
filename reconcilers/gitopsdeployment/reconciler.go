// Package gitopsdeployment reconciles GitOpsDeployments into Argo CD Applications
// and mirrors the Applications' state back into the GitOpsDeployments' status.
package gitopsdeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenant"
)

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch
// Argo CD objects are only ever written in the Argo CD namespace (a Role there;
// kustomize renames the namespace).
// +kubebuilder:rbac:groups=argoproj.io,resources=applications;appprojects,verbs=get;list;watch;create;update;patch;delete,namespace=argocd
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// deletePollInterval is how often a finalizing GitOpsDeployment checks that its
// Application is gone (the Application's delete event usually comes first).
const deletePollInterval = 2 * time.Second

var (
	errNotOurs    = errors.New("name collision")
	errStaleCache = errors.New("the cache does not show an object we created yet")
)

const (
	staleCacheRetry = 500 * time.Millisecond
	waitingRetry    = 30 * time.Second
	squatRetry      = 10 * time.Second
)

// Reconciler reconciles GitOpsDeployments.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache, which only holds Argo CD objects we own.
	APIReader     client.Reader
	ArgoNamespace string
	Projects      *tenant.Projects
	Recorder      record.EventRecorder
	// AllowFileRepositories accepts file:// repository URLs (demos and tests only).
	AllowFileRepositories bool
	// Now is the clock for condition times; tests may set it.
	Now func() metav1.Time
}

// Reconcile brings one GitOpsDeployment's Application in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gd := &v1.GitOpsDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, gd); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted without our finalizer: let go of the Application without
			// touching what it deployed.
			return ctrl.Result{}, r.deleteApplications(ctx, req.NamespacedName, otherUID(""), false)
		}
		return ctrl.Result{}, err
	}
	if !gd.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, gd)
	}
	// A CR deleted and recreated under the same name is a new deployment: the old
	// one's Application goes, without cascade.
	if err := r.deleteApplications(ctx, req.NamespacedName, otherUID(gd.UID), false); err != nil {
		return ctrl.Result{}, err
	}

	orig := gd.DeepCopy()
	app, errMsg, err := r.apply(ctx, gd)
	if errors.Is(err, errNotOurs) {
		app, errMsg, err = nil, err.Error(), nil
	}
	if errors.Is(err, errStaleCache) {
		// Our own create has not reached the cache yet; its event requeues us.
		return ctrl.Result{RequeueAfter: staleCacheRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	r.setStatus(ctx, gd, app, errMsg)
	var result ctrl.Result
	if errMsg == v1.ErrMsgManagedEnvUnresolved {
		// Waiting for another object: its watch usually wakes us, but look again
		// anyway in case the event came before this deployment was cached.
		result.RequeueAfter = waitingRetry
	}
	if strings.HasPrefix(errMsg, tenant.ErrNotOurs.Error()) {
		// A squatted AppProject is not watched (not ours): look again for the
		// admin's removal of it.
		result.RequeueAfter = squatRetry
	}
	return result, r.patchStatus(ctx, orig, gd)
}

// apply writes the Application. It returns the Application as now known, or a
// user-facing message when the spec cannot be deployed (then nothing is written).
func (r *Reconciler) apply(ctx context.Context, gd *v1.GitOpsDeployment) (*argov1alpha1.Application, string, error) {
	current, err := r.currentApplication(ctx, gd)
	if errors.Is(err, errNotOurs) {
		// Never touch an object someone else made, even under our name.
		return nil, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	if msg := validate(gd); msg != "" {
		return current, msg, nil
	}
	if msg := argocd.CheckRepoURL(gd.Spec.Source.RepoURL, r.AllowFileRepositories); msg != "" {
		msg = "spec.source.repoURL: " + msg
		return current, msg, nil
	}
	if msg := argocd.CheckRevision(gd.Spec.Source.TargetRevision); msg != "" {
		msg = "spec.source.targetRevision: " + msg
		return current, msg, nil
	}
	target, msg, err := r.target(ctx, gd)
	if err != nil || msg != "" {
		return current, msg, err
	}
	if target.Project, err = r.Projects.Ensure(ctx, gd.Namespace, gd.Spec.Source.RepoURL); err != nil {
		if errors.Is(err, tenant.ErrNotOurs) {
			return current, err.Error(), nil
		}
		return current, "", err
	}
	desired := argocd.Application(r.ArgoNamespace, gd, target)
	if current == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, "", r.whyExists(ctx, desired)
			}
			return nil, "", fmt.Errorf("creating Application %s: %w", desired.Name, err)
		}
		return desired, "", nil
	}
	if argocd.Equal(current.Spec, desired.Spec) && argocd.HasMeta(current, desired) {
		return current, "", nil
	}
	updated := current.DeepCopy()
	updated.Spec = desired.Spec
	argocd.CopyMeta(updated, desired)
	if err := r.Client.Update(ctx, updated); err != nil {
		return nil, "", fmt.Errorf("updating Application %s: %w", desired.Name, err)
	}
	return updated, "", nil
}

// whyExists explains a create that found the name taken: either our own create
// that the cache has not seen yet, or somebody else's object (never adopted).
func (r *Reconciler) whyExists(ctx context.Context, desired *argov1alpha1.Application) error {
	existing := &argov1alpha1.Application{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
		return fmt.Errorf("reading Application %s: %w", desired.Name, err)
	}
	if argocd.IsOwnedBy(existing.Labels, argocd.OwnerKindGitOpsDeployment, desired.Labels[argocd.LabelOwnerUID]) {
		return errStaleCache
	}
	return fmt.Errorf("%w: Argo CD Application %s/%s exists and was not created for GitOpsDeployment %s",
		errNotOurs, desired.Namespace, desired.Name, desired.Annotations[argocd.AnnotationOwnerName])
}

// currentApplication returns the GitOpsDeployment's Application, or nil.
func (r *Reconciler) currentApplication(ctx context.Context, gd *v1.GitOpsDeployment) (*argov1alpha1.Application, error) {
	app := &argov1alpha1.Application{}
	key := types.NamespacedName{Namespace: r.ArgoNamespace, Name: argocd.ApplicationName(string(gd.UID))}
	if err := r.Client.Get(ctx, key, app); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if !argocd.IsOwnedBy(app.Labels, argocd.OwnerKindGitOpsDeployment, string(gd.UID)) {
		return nil, fmt.Errorf("%w: Argo CD Application %s exists and was not created for GitOpsDeployment %s/%s", errNotOurs, key, gd.Namespace, gd.Name)
	}
	return app, nil
}

// target resolves where the deployment goes: the local cluster (only the
// deployment's own namespace) or a ready ManagedEnvironment of the same namespace.
func (r *Reconciler) target(ctx context.Context, gd *v1.GitOpsDeployment) (argocd.Target, string, error) {
	ns := gd.Spec.Destination.Namespace
	if ns == "" {
		ns = gd.Namespace
	}
	envName := gd.Spec.Destination.Environment
	if envName == "" {
		return argocd.Target{Server: argocd.LocalServer, Namespace: ns}, "", nil
	}
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: gd.Namespace, Name: envName}, env)
	if apierrors.IsNotFound(err) {
		return argocd.Target{}, v1.ErrMsgManagedEnvUnresolved, nil
	}
	if err != nil {
		return argocd.Target{}, "", err
	}
	if !meta.IsStatusConditionTrue(env.Status.Conditions, v1.ManagedEnvironmentConditionConnectionInitializationSucceeded) {
		return argocd.Target{}, v1.ErrMsgManagedEnvUnresolved, nil
	}
	return argocd.Target{Server: argocd.ClusterServer(env.Spec.APIURL, string(env.UID)), Namespace: ns}, "", nil
}

// setStatus computes the new status from the Application and the error, if any.
func (r *Reconciler) setStatus(ctx context.Context, gd *v1.GitOpsDeployment, app *argov1alpha1.Application, errMsg string) {
	now := r.Now()
	before := errorMessage(gd.Status.Conditions)
	gd.Status.Conditions = setError(gd.Status.Conditions, errMsg, now)
	if errMsg != "" && errMsg != before {
		r.Recorder.Event(gd, corev1.EventTypeWarning, string(v1.GitOpsDeploymentReasonErrorOccurred), errMsg)
	}
	if errMsg == "" {
		gd.Status.ObservedGeneration = gd.Generation
	}
	if app == nil {
		return
	}
	mirrored := argocd.MirrorStatus(app, r.serverNames(ctx, gd))
	gd.Status.Sync = mirrored.Sync
	gd.Status.Health = mirrored.Health
	gd.Status.Resources = mirrored.Resources
	gd.Status.ReconciledState = mirrored.ReconciledState
	gd.Status.OperationState = mirrored.OperationState
	gd.Status.Conditions = mirrorAppConditions(gd.Status.Conditions, mirrored.Conditions, now)
}

// serverNames maps the deployment's environment's server URL back to its name.
func (r *Reconciler) serverNames(ctx context.Context, gd *v1.GitOpsDeployment) argocd.ServerNames {
	names := argocd.ServerNames{argocd.LocalServer: ""}
	if name := gd.Spec.Destination.Environment; name != "" {
		env := &v1.GitOpsDeploymentManagedEnvironment{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: gd.Namespace, Name: name}, env); err == nil {
			names[argocd.ClusterServer(env.Spec.APIURL, string(env.UID))] = name
		}
	}
	return names
}

func errorMessage(conds []v1.GitOpsDeploymentCondition) string {
	for _, c := range conds {
		if c.Type == v1.GitOpsDeploymentConditionErrorOccurred && c.Status == v1.GitOpsConditionStatusTrue {
			return c.Message
		}
	}
	return ""
}

// patchStatus writes the status only when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, orig, gd *v1.GitOpsDeployment) error {
	if equality.Semantic.DeepEqual(orig.Status, gd.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, gd, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

// finalize runs when a GitOpsDeployment is being deleted. With our finalizer the
// Application is deleted with cascade (Argo CD removes the deployed resources) and
// the finalizer goes only once the Application is gone.
func (r *Reconciler) finalize(ctx context.Context, gd *v1.GitOpsDeployment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(gd, v1.FinalizerResourcesFinalizer) {
		return ctrl.Result{}, r.deleteApplications(ctx, client.ObjectKeyFromObject(gd), otherUID(""), false)
	}
	remaining, err := r.applications(ctx, client.ObjectKeyFromObject(gd), sameUID(gd.UID))
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(remaining) > 0 {
		if err := r.deleteApplications(ctx, client.ObjectKeyFromObject(gd), sameUID(gd.UID), true); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: deletePollInterval}, nil
	}
	patch := client.MergeFrom(gd.DeepCopy())
	controllerutil.RemoveFinalizer(gd, v1.FinalizerResourcesFinalizer)
	if err := r.Client.Patch(ctx, gd, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// applications lists the Applications made for the GitOpsDeployment key whose
// owner UID satisfies match.
func (r *Reconciler) applications(ctx context.Context, key types.NamespacedName, match func(uid types.UID) bool) ([]argov1alpha1.Application, error) {
	var apps argov1alpha1.ApplicationList
	if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingFields{ownerIndex: key.String()}); err != nil {
		return nil, fmt.Errorf("listing Applications of %s: %w", key, err)
	}
	var out []argov1alpha1.Application
	for _, app := range apps.Items {
		uid := types.UID(app.Labels[argocd.LabelOwnerUID])
		if argocd.IsOwnedBy(app.Labels, argocd.OwnerKindGitOpsDeployment, string(uid)) && match(uid) {
			out = append(out, app)
		}
	}
	return out, nil
}

func sameUID(uid types.UID) func(types.UID) bool {
	return func(u types.UID) bool { return u == uid }
}

func otherUID(uid types.UID) func(types.UID) bool {
	return func(u types.UID) bool { return u != uid }
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
		if cascade && !controllerutil.ContainsFinalizer(app, argov1alpha1.ResourcesFinalizerName) {
			patch := client.MergeFrom(app.DeepCopy())
			controllerutil.AddFinalizer(app, argov1alpha1.ResourcesFinalizerName)
			if err := r.Client.Patch(ctx, app, patch); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("adding the resources finalizer to Application %s: %w", app.Name, err)
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
