// Package snapshotenvironmentbinding reconciles SnapshotEnvironmentBindings into
// one Argo CD ApplicationSet each, whose plugin generator (our
// applicationset-generator, answering from reconcilers/binding, which this
// reconciler shares) yields one Application per component, and mirrors the
// generated Applications back into the binding's status.
package snapshotenvironmentbinding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantproject"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots;environments;components;applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=applicationsets,verbs=get;list;watch;create;update;patch;delete,namespace=argocd

const (
	// Finalizer makes the binding wait until what it deployed is gone.
	Finalizer = "managed-gitops.redhat.com/snapshotenvironmentbinding"
	// annotationInputHash is the hash of the generator's answer for the
	// binding: when it changes, Argo CD regenerates at once.
	annotationInputHash = "managed-gitops.redhat.com/generator-input-hash"
	// annotationRefresh asks the applicationset-controller to regenerate a set
	// whose generation failed (it removes the annotation on success).
	annotationRefresh = "argocd.argoproj.io/application-set-refresh"
	// annotationRetry is when Argo CD was last asked to try a failed
	// generation again.
	annotationRetry = "managed-gitops.redhat.com/generation-retry"
)

// Reasons of this reconciler's refusals (Event and Ready; the
// bindingConditions show the seed's ErrorOccurred); binding's for the rest.
const (
	ReasonAppProjectNotOurs     = "AppProjectNotOurs"
	ReasonApplicationSetNotOurs = "ApplicationSetNotOurs"
	ReasonDuplicateBinding      = "DuplicateBinding"
	// ReasonRepositoryNotReadable: a component's repository can be read
	// neither anonymously nor with the namespace's valid RepositoryCredentials.
	ReasonRepositoryNotReadable = "RepositoryNotReadable"
)

// Reconciler reconciles SnapshotEnvironmentBindings.
type Reconciler struct {
	Client        client.Client
	ArgoNamespace string
	Projects      *tenantproject.Projects
	Recorder      record.EventRecorder
	// APIReader reads past the cache, which holds only our Argo CD objects.
	APIReader client.Reader
	// AllowFileRepositories accepts file:// repository URLs (demos and tests only).
	AllowFileRepositories bool
	// Now is the clock; tests may set it.
	Now kernel.Clock

	// statusWrites: status diffs against the server's status while the cache
	// is behind our last write (set up by SetupWithManager).
	statusWrites *kernel.StatusWrites
}

// Reconcile brings one binding's ApplicationSet and status in line, in the
// kernel's shape (see kernel/doc.go).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	seb := &as.SnapshotEnvironmentBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, seb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !seb.DeletionTimestamp.IsZero() {
		return kernel.Outcome(ctrl.Result{}, r.reconcileDelete(ctx, seb))
	}
	if err := kernel.AddFinalizer(ctx, r.Client, seb, Finalizer); err != nil {
		return ctrl.Result{}, err
	}
	patcher := kernel.NewStatusPatcher(r.Client, seb).Remembering(r.statusWrites)
	defer patcher.Patch(ctx, seb, &err)
	components, err := r.reconcileNormal(ctx, seb)
	refusal := kernel.AsRefusal(err)
	if refusal != nil {
		// Some inputs are read around the cache (names held by Applications
		// that are not ours, Argo CD's failed generation), and a watched one
		// created just before the binding can be missed by the watch mapping.
		refusal.Retry(kernel.UnwatchedRecheck)
	}
	if err == nil || refusal != nil {
		// A transient error leaves the status as it was.
		if err := r.setStatus(ctx, seb, refusal, components); err != nil {
			return kernel.Outcome(ctrl.Result{}, err)
		}
	}
	return kernel.Outcome(ctrl.Result{}, err)
}

// reconcileNormal writes the ApplicationSet and returns how many components
// the binding deploys, or a *kernel.Refusal saying why it cannot.
func (r *Reconciler) reconcileNormal(ctx context.Context, seb *as.SnapshotEnvironmentBinding) (int, error) {
	if err := r.olderDuplicate(ctx, seb); err != nil {
		return 0, err
	}
	// The generator answers Argo CD only with what passes the same check.
	params, err := binding.Generate(ctx, r.Client, r.APIReader, r.ArgoNamespace, seb, r.AllowFileRepositories)
	if err != nil {
		return 0, err
	}
	var repos []string
	for _, p := range params {
		repos = append(repos, p.RepoURL)
	}
	if _, err := r.Projects.Ensure(ctx, seb.Namespace, repos...); err != nil {
		if errors.Is(err, kernel.ErrNotOurs) {
			return 0, binding.Refuse(ReasonAppProjectNotOurs, "%s", err.Error())
		}
		var unreadable *tenantproject.NotReadableError
		if errors.As(err, &unreadable) {
			return 0, binding.Refuse(ReasonRepositoryNotReadable, "%s", err.Error())
		}
		return 0, err
	}
	err = r.writeApplicationSet(ctx, seb, hashOf(params), repos)
	var notOurs *kernel.NotOursError
	if errors.As(err, &notOurs) {
		return 0, binding.Refuse(ReasonApplicationSetNotOurs, "%s: delete or rename it", notOurs.Error())
	}
	return len(params), err
}

// olderDuplicate refuses seb when an older binding has the same application
// and environment (binding.Duplicate: the older one deploys the pair).
func (r *Reconciler) olderDuplicate(ctx context.Context, seb *as.SnapshotEnvironmentBinding) error {
	var list as.SnapshotEnvironmentBindingList
	if err := r.Client.List(ctx, &list, client.InNamespace(seb.Namespace)); err != nil {
		return err
	}
	if o := binding.Duplicate(list.Items, seb); o != nil {
		return binding.Refuse(ReasonDuplicateBinding, "duplicate combination of Application (%s) and Environment (%s). Duplicated by: %s",
			seb.Spec.Application, seb.Spec.Environment, o.Name)
	}
	return nil
}

func hashOf(params []argocd.GeneratorParams) string {
	raw, _ := json.Marshal(params)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// writeApplicationSet creates or updates the binding's ApplicationSet, with
// the hash of the generator's answer among its annotations: the
// applicationset controller generates again on any annotation change (but
// its own removal of a refresh request), so a changed answer costs one write,
// and a new ApplicationSet, which it generates anyway, no second one (a
// refresh request after the create made it generate every binding of a burst
// twice). While Argo CD reports that it could not generate (e.g. the
// generator's token was not there yet: the applicationset controller does not
// retry that by itself), it is asked to try again. Argo CD's error is a
// refusal.
func (r *Reconciler) writeApplicationSet(ctx context.Context, seb *as.SnapshotEnvironmentBinding, inputHash string, repos []string) error {
	desired := argocd.ApplicationSet(r.ArgoNamespace, seb)
	sort.Strings(repos)
	desired.Annotations[argocd.AnnotationRepositories] = strings.Join(slices.Compact(repos), ",")
	desired.Annotations[annotationInputHash] = inputHash
	current := &argov1alpha1.ApplicationSet{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return err
	} else if !ownership.IsOwnedBy(current.Labels, ownership.KindBinding, string(seb.UID)) {
		return &kernel.NotOursError{Kind: "ApplicationSet", Namespace: current.Namespace, Name: current.Name}
	}
	if err := r.owned(seb).Apply(ctx, current, desired); err != nil {
		return err
	}
	if current == nil {
		current = desired // just created
	}
	argoErr := generationError(current)
	if argoErr == nil || !r.retryDue(current) {
		return argoErr
	}
	// Requests to Argo CD, not state we own: a merge patch, so that Argo CD
	// removing the refresh annotation is not undone by our next apply. Argo
	// CD keeps the refresh annotation after a failure and reacts to a change
	// of any other: the retry stamp makes it try again.
	requests := map[string]string{annotationRefresh: "true", annotationRetry: r.Now.Now().UTC().Format(time.RFC3339)}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": requests}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, current, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(kernel.FieldManager)); client.IgnoreNotFound(err) != nil {
		return err
	}
	return argoErr
}

// owned writes the ApplicationSets of seb.
func (r *Reconciler) owned(seb *as.SnapshotEnvironmentBinding) kernel.Owned {
	return kernel.Owned{Client: r.Client, APIReader: r.APIReader, Ours: func(o client.Object) bool {
		return ownership.IsOwnedBy(o.GetLabels(), ownership.KindBinding, string(seb.UID))
	}}
}

// retryDue says whether Argo CD was last asked to generate again more than
// UnwatchedRecheck ago (it would wait 3 minutes).
func (r *Reconciler) retryDue(set *argov1alpha1.ApplicationSet) bool {
	last, err := time.Parse(time.RFC3339, set.Annotations[annotationRetry])
	return err != nil || r.Now.Now().Sub(last) >= kernel.UnwatchedRecheck
}

// generationError is the refusal of Argo CD's error when it could not
// generate the set's Applications the last time it tried, or nil.
func generationError(set *argov1alpha1.ApplicationSet) error {
	for _, c := range set.Status.Conditions {
		if c.Type == argov1alpha1.ApplicationSetConditionErrorOccurred && c.Status == argov1alpha1.ApplicationSetConditionStatusTrue {
			return kernel.Refuse(as.BindingReasonErrorGeneratingGitOpsDeployment, "Argo CD cannot generate the Applications: %s", c.Message)
		}
	}
	return nil
}

// setStatus mirrors the generated Applications and the refusal, if any, as
// decideStatus says; components is how many the binding deploys.
func (r *Reconciler) setStatus(ctx context.Context, seb *as.SnapshotEnvironmentBinding, refusal *kernel.Refusal, components int) error {
	var apps argov1alpha1.ApplicationList
	if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingFields{ownerUIDIndex: string(seb.UID)}); err != nil {
		return err
	}
	tenant := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: seb.Namespace}, tenant); err != nil {
		return err
	}
	status := decideStatus(seb, refusal, apps.Items, string(tenant.UID), components)
	now := r.Now.Now()
	if status.errorOccurred != nil {
		// The condition's reason may be the seed's ErrorOccurred; the Event names the failure.
		event := ""
		if refusal != nil {
			event = refusal.Reason
		}
		kernel.SetConditionWarning(r.Recorder, seb, &seb.Status.BindingConditions, *status.errorOccurred, event, now)
	}
	seb.Status.GitOpsDeployments = status.deployed
	if status.allDeployed != nil {
		kernel.SetCondition(r.Recorder, seb, &seb.Status.ComponentDeploymentConditions, *status.allDeployed, now, false)
	}
	seb.Status.ObservedGeneration = seb.Generation
	kernel.SetReady(&seb.Status.Conditions, refusal.AsError(), readiness(status.allDeployed, status.deployed), seb.Generation, now)
	return nil
}

// reconcileDelete deletes the binding's ApplicationSet (Argo CD then deletes
// the generated Applications and, through their finalizer, what they
// deployed) and lets the binding go once it is gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, seb *as.SnapshotEnvironmentBinding) error {
	set := &argov1alpha1.ApplicationSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.ArgoNamespace, Name: argocd.ApplicationSetName(string(seb.UID))}, set)
	if err == nil && ownership.IsOwnedBy(set.Labels, ownership.KindBinding, string(seb.UID)) {
		if set.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, set, client.Preconditions{UID: &set.UID}, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return kernel.Wait("ApplicationSetDeleting", kernel.PollInterval, "the deletion of ApplicationSet %s/%s", set.Namespace, set.Name)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return kernel.RemoveFinalizer(ctx, r.Client, seb, Finalizer)
}
