// Package snapshotenvironmentbinding reconciles SnapshotEnvironmentBindings into
// one Argo CD ApplicationSet each, whose plugin generator (our
// applicationset-generator) yields one Application per component, and mirrors
// the generated Applications back into the binding's status.
package snapshotenvironmentbinding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	generator "github.com/gitops-service/gitops-service/applicationset-generator"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/tenant"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshotenvironmentbindings/finalizers,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots;environments;components;applications,verbs=get;list;watch
// +kubebuilder:rbac:groups=argoproj.io,resources=applicationsets,verbs=get;list;watch;create;update;patch;delete,namespace=argocd

const (
	// Finalizer makes the binding wait until what it deployed is gone.
	Finalizer = "managed-gitops.redhat.com/snapshotenvironmentbinding"
	// annotationInputHash is the hash of the generator's last answer for the
	// binding: when it changes, Argo CD is asked to regenerate at once.
	annotationInputHash = "managed-gitops.redhat.com/generator-input-hash"
	// annotationRefresh makes the applicationset-controller regenerate now (it
	// removes the annotation itself).
	annotationRefresh = "argocd.argoproj.io/application-set-refresh"
	// annotationRetry is when Argo CD was last asked to try a failed
	// generation again.
	annotationRetry = "managed-gitops.redhat.com/generation-retry"
	deletePoll      = 2 * time.Second
	inputRetry      = 10 * time.Second
)

// Reconciler reconciles SnapshotEnvironmentBindings.
type Reconciler struct {
	Client        client.Client
	ArgoNamespace string
	Projects      *tenant.Projects
	Recorder      record.EventRecorder
	// AllowFileRepositories accepts file:// repository URLs (demos and tests only).
	AllowFileRepositories bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Reconcile brings one binding's ApplicationSet and status in line.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	seb := &as.SnapshotEnvironmentBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, seb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !seb.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, seb)
	}
	if !controllerutil.ContainsFinalizer(seb, Finalizer) {
		patch := client.MergeFrom(seb.DeepCopy())
		controllerutil.AddFinalizer(seb, Finalizer)
		if err := r.Client.Patch(ctx, seb, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	orig := seb.DeepCopy()
	msg, reason, err := r.apply(ctx, seb)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.setStatus(ctx, seb, reason, msg); err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	if msg != "" {
		// Inputs are watched, but an input created just before the binding can
		// be missed by the watch mapping; look again later as a safety net.
		result.RequeueAfter = inputRetry
	}
	if equality.Semantic.DeepEqual(orig.Status, seb.Status) {
		return result, nil
	}
	return result, client.IgnoreNotFound(r.Client.Status().Patch(ctx, seb, client.MergeFrom(orig)))
}

// apply writes the ApplicationSet, or returns why it cannot (message, reason).
func (r *Reconciler) apply(ctx context.Context, seb *as.SnapshotEnvironmentBinding) (string, string, error) {
	if dup, err := r.olderDuplicate(ctx, seb); err != nil || dup != "" {
		return fmt.Sprintf("duplicate combination of Application (%s) and Environment (%s). Duplicated by: %s",
			seb.Spec.Application, seb.Spec.Environment, dup), as.BindingReasonErrorOccurred, err
	}
	in, err := generator.Resolve(ctx, r.Client, seb)
	var inputErr *generator.InputError
	if errors.As(err, &inputErr) {
		return inputErr.Message, inputErr.Reason, nil
	}
	if err != nil {
		return "", "", err
	}
	params, err := generator.ComponentParams(in)
	if errors.As(err, &inputErr) {
		return inputErr.Message, inputErr.Reason, nil
	}
	if err != nil {
		return "", "", err
	}
	var repos []string
	for _, p := range params {
		repo := p["repoURL"].(string)
		// Refused before the project lists it: Argo CD then refuses the
		// generated Application too.
		if msg := argocd.CheckRepoURL(repo, r.AllowFileRepositories); msg != "" {
			return fmt.Sprintf("component %v: GitOps repository: %s", p["component"], msg), as.BindingReasonGitOpsRepoNotReady, nil
		}
		repos = append(repos, repo)
	}
	if _, err := r.Projects.Ensure(ctx, seb.Namespace, repos...); err != nil {
		if errors.Is(err, tenant.ErrNotOurs) {
			return err.Error(), as.BindingReasonErrorOccurred, nil
		}
		return "", "", err
	}
	argoErr, err := r.writeApplicationSet(ctx, seb, hashOf(params), repos)
	if argoErr != "" {
		return "Argo CD cannot generate the Applications: " + argoErr, as.BindingReasonErrorGeneratingGitOpsDeployment, err
	}
	return "", "", err
}

// olderDuplicate names an older binding of the same application and environment.
func (r *Reconciler) olderDuplicate(ctx context.Context, seb *as.SnapshotEnvironmentBinding) (string, error) {
	var list as.SnapshotEnvironmentBindingList
	if err := r.Client.List(ctx, &list, client.InNamespace(seb.Namespace)); err != nil {
		return "", err
	}
	for _, o := range list.Items {
		if o.UID == seb.UID || o.Spec.Application != seb.Spec.Application || o.Spec.Environment != seb.Spec.Environment {
			continue
		}
		if o.CreationTimestamp.Before(&seb.CreationTimestamp) || (o.CreationTimestamp.Equal(&seb.CreationTimestamp) && o.Name < seb.Name) {
			return o.Name, nil
		}
	}
	return "", nil
}

func hashOf(params []map[string]any) string {
	raw, _ := json.Marshal(params)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// writeApplicationSet creates or updates the binding's ApplicationSet and asks
// Argo CD to regenerate when the generator's answer changed, or while Argo CD
// reports that it could not generate (e.g. the generator's token was not there
// yet: the applicationset-controller does not retry that by itself). It
// returns Argo CD's error, if any.
func (r *Reconciler) writeApplicationSet(ctx context.Context, seb *as.SnapshotEnvironmentBinding, inputHash string, repos []string) (string, error) {
	desired := argocd.ApplicationSet(r.ArgoNamespace, seb)
	desired.Annotations[annotationInputHash] = inputHash
	sort.Strings(repos)
	desired.Annotations[argocd.AnnotationRepositories] = strings.Join(slices.Compact(repos), ",")
	current := &argov1alpha1.ApplicationSet{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating ApplicationSet %s: %w", desired.Name, err)
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !argocd.IsOwnedBy(current.Labels, argocd.OwnerKindBinding, string(seb.UID)) {
		return "", fmt.Errorf("ApplicationSet %s exists and was not created for this binding", desired.Name)
	}
	argoErr := generationError(current)
	retry := argoErr != "" && r.retryDue(current)
	if !retry && current.Annotations[annotationInputHash] == inputHash && argocd.Equal(current.Spec, desired.Spec) && argocd.HasMeta(current, desired) {
		return argoErr, nil
	}
	updated := current.DeepCopy()
	if current.Annotations[annotationInputHash] != inputHash || retry {
		updated.Annotations = merge(updated.Annotations, map[string]string{annotationRefresh: "true"})
	}
	if retry {
		// Argo CD keeps the refresh annotation after a failure and reacts to a
		// change of any other: this one makes it try again.
		updated.Annotations[annotationRetry] = r.now().UTC().Format(time.RFC3339)
	}
	updated.Spec = desired.Spec
	argocd.CopyMeta(updated, desired)
	return argoErr, r.Client.Update(ctx, updated)
}

// retryDue says whether Argo CD was last asked to generate again more than
// inputRetry ago.
func (r *Reconciler) retryDue(set *argov1alpha1.ApplicationSet) bool {
	last, err := time.Parse(time.RFC3339, set.Annotations[annotationRetry])
	return err != nil || r.now().Sub(last) >= inputRetry
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// generationError is Argo CD's message when it could not generate the set's
// Applications the last time it tried.
func generationError(set *argov1alpha1.ApplicationSet) string {
	for _, c := range set.Status.Conditions {
		if c.Type == argov1alpha1.ApplicationSetConditionErrorOccurred && c.Status == argov1alpha1.ApplicationSetConditionStatusTrue {
			return c.Message
		}
	}
	return ""
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

// setStatus mirrors the generated Applications and the error, if any.
func (r *Reconciler) setStatus(ctx context.Context, seb *as.SnapshotEnvironmentBinding, reason, msg string) error {
	before := meta.FindStatusCondition(seb.Status.BindingConditions, as.BindingConditionErrorOccurred)
	if msg != "" {
		meta.SetStatusCondition(&seb.Status.BindingConditions, metav1.Condition{Type: as.BindingConditionErrorOccurred,
			Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: seb.Generation})
		if before == nil || before.Message != msg || before.Status != metav1.ConditionTrue {
			r.Recorder.Event(seb, corev1.EventTypeWarning, reason, msg)
		}
	} else if before != nil {
		meta.SetStatusCondition(&seb.Status.BindingConditions, metav1.Condition{Type: as.BindingConditionErrorOccurred,
			Status: metav1.ConditionFalse, Reason: as.BindingConditionErrorOccurred + "Resolved", ObservedGeneration: seb.Generation})
	}
	var apps argov1alpha1.ApplicationList
	if err := r.Client.List(ctx, &apps, client.InNamespace(r.ArgoNamespace), client.MatchingFields{ownerUIDIndex: string(seb.UID)}); err != nil {
		return err
	}
	var deployed []as.BindingStatusGitOpsDeployment
	synced := 0
	var syncErrors []string
	for _, a := range apps.Items {
		if e := argocd.SyncError(&a); e != "" {
			syncErrors = append(syncErrors, fmt.Sprintf("component %s: %s", a.Labels[as.LabelComponent], e))
		}
		deployed = append(deployed, as.BindingStatusGitOpsDeployment{
			ComponentName:                a.Labels[as.LabelComponent],
			GitOpsDeployment:             a.Name,
			GitOpsDeploymentSyncStatus:   string(a.Status.Sync.Status),
			GitOpsDeploymentHealthStatus: string(a.Status.Health.Status),
			GitOpsDeploymentCommitID:     a.Status.Sync.Revision,
		})
		if a.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced {
			synced++
		}
	}
	sort.Slice(deployed, func(i, j int) bool { return deployed[i].ComponentName < deployed[j].ComponentName })
	seb.Status.GitOpsDeployments = deployed
	if msg != "" {
		return nil
	}
	want := r.componentCount(ctx, seb)
	cond := metav1.Condition{Type: as.ComponentDeploymentConditionAllComponentsDeployed, ObservedGeneration: seb.Generation,
		Message: fmt.Sprintf("%d of %d components deployed", synced, want)}
	if len(syncErrors) > 0 {
		// What Argo CD refused (e.g. the project fence) is shown, not only "unsynced".
		sort.Strings(syncErrors)
		cond.Status, cond.Reason = metav1.ConditionFalse, as.ComponentDeploymentConditionErrorOccurred
		cond.Message += "; SyncError: " + strings.Join(syncErrors, "; ")
	} else if synced == want && want > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, as.ComponentDeploymentConditionCommitsSynced
	} else {
		cond.Status, cond.Reason = metav1.ConditionFalse, as.ComponentDeploymentConditionCommitsUnsynced
	}
	meta.SetStatusCondition(&seb.Status.ComponentDeploymentConditions, cond)
	return nil
}

// componentCount is the number of components the binding deploys (its Snapshot's).
func (r *Reconciler) componentCount(ctx context.Context, seb *as.SnapshotEnvironmentBinding) int {
	snap := &as.Snapshot{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: seb.Namespace, Name: seb.Spec.Snapshot}, snap); err != nil {
		return 0
	}
	return len(snap.Spec.Components)
}

// finalize deletes the binding's ApplicationSet (Argo CD then deletes the
// generated Applications and, through their finalizer, what they deployed) and
// lets the binding go once it is gone.
func (r *Reconciler) finalize(ctx context.Context, seb *as.SnapshotEnvironmentBinding) (ctrl.Result, error) {
	set := &argov1alpha1.ApplicationSet{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.ArgoNamespace, Name: argocd.ApplicationSetName(string(seb.UID))}, set)
	if err == nil && argocd.IsOwnedBy(set.Labels, argocd.OwnerKindBinding, string(seb.UID)) {
		if set.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, set, client.Preconditions{UID: &set.UID}, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: deletePoll}, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(seb.DeepCopy())
	controllerutil.RemoveFinalizer(seb, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, seb, patch))
}
