// Package environment reconciles App Studio Environments into
// GitOpsDeploymentManagedEnvironments: an Environment whose
// unstableConfigurationFields.kubernetesCredentials name a cluster gets a
// ManagedEnvironment "managed-environment-<environment>" and a copy of its
// credentials Secret "managed-environment-secret-<environment>", both in its
// namespace, both owned by it; the ManagedEnvironment reconciler then connects
// Argo CD to the cluster. An Environment without credentials is the tenant's
// own namespace on the local cluster and gets nothing.
package environment

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments/status,verbs=get;update;patch
// Owner references with blockOwnerDeletion need update on the owner's finalizers.
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=environments/finalizers,verbs=update
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=deploymenttargetclaims;deploymenttargets,verbs=get;list;watch
// The user's credentials Secret is read one at a time, uncached, from the
// Environment's own namespace; its copy is written there. Tenant Secrets are
// never listed or watched.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of the Reconciler's intervals.
const (
	// DefaultRecheckInterval is how often the credentials Secret of a working
	// Environment is compared with its copy (besides the watch, a safety net).
	DefaultRecheckInterval = 2 * time.Minute
	// DefaultRetryInterval is how often a failing Environment is looked at again.
	DefaultRetryInterval = 30 * time.Second
)

// Reconciler reconciles Environments.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets, which the manager does not cache in tenant namespaces.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// RecheckInterval and RetryInterval: see DefaultRecheckInterval and DefaultRetryInterval.
	RecheckInterval, RetryInterval time.Duration
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock
}

// Reconcile brings one Environment's ManagedEnvironment and its Secret in line
// with the Environment's spec and credentials Secret.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	env := &as.Environment{}
	err = r.Client.Get(ctx, req.NamespacedName, env)
	if apierrors.IsNotFound(err) || (err == nil && !env.DeletionTimestamp.IsZero()) {
		// Gone: what we wrote for it goes too (the owner references let
		// the garbage collector do the same, where one runs).
		_, err := r.remove(ctx, req.NamespacedName)
		return ctrl.Result{}, err
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	patcher := kernel.NewStatusPatcher(r.Client, env)
	defer patcher.Patch(ctx, env, &err)
	wanted, refusal, err := r.apply(ctx, env)
	if err != nil {
		return kernel.Outcome(ctrl.Result{}, err)
	}
	r.setCondition(env, refusal)
	switch {
	case refusal != nil && refusal.waiting:
		// The claim and target are watched: no retry storm while waiting.
		return ctrl.Result{}, nil
	case refusal != nil:
		return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
	case wanted:
		return ctrl.Result{RequeueAfter: r.RecheckInterval}, nil
	}
	return ctrl.Result{}, nil
}

// apply writes env's Secret and ManagedEnvironment when env has usable
// credentials, and removes them when it has none or they are unusable. wanted
// says that env asks for a ManagedEnvironment.
func (r *Reconciler) apply(ctx context.Context, env *as.Environment) (wanted bool, _ *Refusal, _ error) {
	key := client.ObjectKeyFromObject(env)
	src, refusal, err := r.credentialsSource(ctx, env)
	if err != nil {
		return false, nil, err
	}
	if src == nil && refusal != nil && refusal.keep {
		// Waiting for, or lost, a claim's target: what was deployed through
		// it stays as it is.
		return true, refusal, nil
	}
	if src == nil {
		// The tenant's own namespace on the local cluster, or an Environment
		// we cannot deploy to: nothing of ours may point anywhere else.
		removed, err := r.remove(ctx, key)
		if removed && err == nil {
			r.Recorder.Eventf(env, corev1.EventTypeNormal, "ManagedEnvironmentDeleted",
				"Deleted GitOpsDeploymentManagedEnvironment %s: the Environment no longer has usable cluster credentials", ownership.ManagedEnvironmentName(env.Name))
		}
		return false, refusal, err
	}
	kubeconfig, refusal, err := r.readCredentials(ctx, env, src)
	if err != nil {
		return true, nil, err
	}
	if refusal != nil {
		// Fail closed: the copy of credentials the user removed or broke goes.
		_, err := r.remove(ctx, key)
		return true, refusal, err
	}
	me, meRefusal, err := r.currentManagedEnvironment(ctx, env)
	if err != nil {
		return true, nil, err
	}
	secret, secretRefusal, err := r.currentSecret(ctx, env)
	if err != nil {
		return true, nil, err
	}
	if refusal = firstOf(meRefusal, secretRefusal); refusal != nil {
		// A foreign object has one of our names: it is left alone, and ours go.
		_, err := r.remove(ctx, key)
		return true, refusal, err
	}
	if secret, err = r.writeSecret(ctx, secret, desiredSecret(env, kubeconfig)); err != nil {
		return true, nil, err
	}
	return true, nil, r.writeManagedEnvironment(ctx, env, me, desiredManagedEnvironment(env, src, secret.ResourceVersion))
}

func firstOf(refusals ...*Refusal) *Refusal {
	for _, r := range refusals {
		if r != nil {
			return r
		}
	}
	return nil
}

// credentialsSource says where env's cluster and credentials come from: nil
// (and no refusal) for the tenant's own namespace on the local cluster.
func (r *Reconciler) credentialsSource(ctx context.Context, env *as.Environment) (*Source, *Refusal, error) {
	claim := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	switch {
	case claim != "" && env.HasCredentials():
		return nil, refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set"), nil
	case claim != "":
		return r.sourceFromClaim(ctx, env, claim)
	case env.HasCredentials():
		src, refusal := sourceFromCredentials(env)
		return src, refusal, nil
	}
	return nil, nil, nil
}

// readCredentials reads the kubeconfig of the user's credentials Secret,
// uncached and only from env's own namespace.
func (r *Reconciler) readCredentials(ctx context.Context, env *as.Environment, src *Source) ([]byte, *Refusal, error) {
	name := src.CredentialsSecret
	notFound := refuse(as.EnvironmentReasonSecretNotFound,
		"the secret %s referenced by the Environment resource was not found in namespace %s", name, env.Namespace)
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, notFound, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound, nil
		}
		return nil, nil, fmt.Errorf("reading Secret %s/%s: %w", env.Namespace, name, err)
	}
	if secret.Type != v1.ManagedEnvironmentSecretType && !src.AnySecretType {
		return nil, refuse(as.EnvironmentReasonInvalidSecretType,
			"the secret %s referenced by the Environment resource has type '%s'; it must be of type '%s'", name, secret.Type, v1.ManagedEnvironmentSecretType), nil
	}
	if len(secret.Data[KubeconfigKey]) == 0 {
		return nil, refuse(as.EnvironmentReasonMissingKubeConfigField,
			"the secret %s referenced by the Environment resource has no '%s' field", name, KubeconfigKey), nil
	}
	return secret.Data[KubeconfigKey], nil, nil
}

// currentManagedEnvironment returns env's ManagedEnvironment, or nil. One of
// that name that is not ours is a refusal: it is never touched.
func (r *Reconciler) currentManagedEnvironment(ctx context.Context, env *as.Environment) (*v1.GitOpsDeploymentManagedEnvironment, *Refusal, error) {
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: ownership.ManagedEnvironmentName(env.Name)}, me)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if ok, err := r.checkOurs(ctx, env, me); !ok || err != nil {
		return nil, collision(env, "GitOpsDeploymentManagedEnvironment", me.Name), err
	}
	return me, nil, nil
}

// currentSecret returns env's copy of the credentials, or nil. One of that
// name that is not ours is a refusal: it is never touched (nor read further).
func (r *Reconciler) currentSecret(ctx context.Context, env *as.Environment) (*corev1.Secret, *Refusal, error) {
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: SecretName(env.Name)}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading Secret %s/%s: %w", env.Namespace, SecretName(env.Name), err)
	}
	if ok, err := r.checkOurs(ctx, env, s); !ok || err != nil {
		return nil, collision(env, "Secret", s.Name), err
	}
	return s, nil, nil
}

// checkOurs says whether obj is ours for env. An object of ours made for an
// earlier Environment of the same name, or being deleted, is deleted (or
// waited for): kernel.ErrStaleCache.
func (r *Reconciler) checkOurs(ctx context.Context, env *as.Environment, obj client.Object) (bool, error) {
	switch {
	case ownedBy(obj, string(env.UID)) && obj.GetDeletionTimestamp().IsZero():
		return true, nil
	case ownedByName(obj, env.Namespace, env.Name):
		if err := r.deleteExactly(ctx, obj); err != nil {
			return true, err
		}
		return true, kernel.ErrStaleCache
	}
	return false, nil
}

func collision(env *as.Environment, kind, name string) *Refusal {
	return refuse(as.EnvironmentReasonNameCollision,
		"the %s %s exists in namespace %s and was not created by the GitOps Service for Environment '%s'; it is left untouched: delete or rename it",
		kind, name, env.Namespace, env.Name)
}

// writeSecret creates or updates our copy of the credentials, only when it changed.
func (r *Reconciler) writeSecret(ctx context.Context, current, desired *corev1.Secret) (*corev1.Secret, error) {
	if current == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, kernel.ErrStaleCache
			}
			return nil, fmt.Errorf("creating Secret %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return desired, nil
	}
	if len(current.Data) == 1 && bytes.Equal(current.Data[KubeconfigKey], desired.Data[KubeconfigKey]) && argocd.HasMeta(current, desired) {
		return current, nil
	}
	updated := current.DeepCopy()
	updated.Data = desired.Data
	argocd.CopyMeta(updated, desired)
	if err := r.Client.Update(ctx, updated); err != nil {
		return nil, fmt.Errorf("updating Secret %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("updated the copy of the credentials Secret", "secret", desired.Name)
	return updated, nil
}

// writeManagedEnvironment creates or updates env's ManagedEnvironment, only when it changed.
func (r *Reconciler) writeManagedEnvironment(ctx context.Context, env *as.Environment, current, desired *v1.GitOpsDeploymentManagedEnvironment) error {
	if current == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Ours not yet in the cache, or someone else's: the next pass tells.
				return kernel.ErrStaleCache
			}
			return fmt.Errorf("creating GitOpsDeploymentManagedEnvironment %s: %w", desired.Name, err)
		}
		r.Recorder.Eventf(env, corev1.EventTypeNormal, "ManagedEnvironmentCreated",
			"Created GitOpsDeploymentManagedEnvironment %s for the cluster %s", desired.Name, desired.Spec.APIURL)
		return nil
	}
	if equality.Semantic.DeepEqual(current.Spec, desired.Spec) && argocd.HasMeta(current, desired) {
		return nil
	}
	updated := current.DeepCopy()
	updated.Spec = desired.Spec
	argocd.CopyMeta(updated, desired)
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating GitOpsDeploymentManagedEnvironment %s: %w", desired.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("updated the GitOpsDeploymentManagedEnvironment", "managedEnvironment", desired.Name)
	return nil
}

// remove deletes the ManagedEnvironment and Secret we wrote for an Environment
// named key (whatever its UID); removed says whether the ManagedEnvironment was
// among them.
func (r *Reconciler) remove(ctx context.Context, key types.NamespacedName) (removed bool, _ error) {
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: ownership.ManagedEnvironmentName(key.Name)}, me)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err == nil && ownedByName(me, key.Namespace, key.Name) && me.DeletionTimestamp.IsZero() {
		if err := r.deleteExactly(ctx, me); err != nil {
			return false, err
		}
		removed = true
	}
	s := &corev1.Secret{}
	err = r.APIReader.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: SecretName(key.Name)}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return removed, fmt.Errorf("reading Secret %s/%s: %w", key.Namespace, SecretName(key.Name), err)
	}
	if err == nil && ownedByName(s, key.Namespace, key.Name) {
		if err := r.deleteExactly(ctx, s); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deleteExactly deletes exactly the object we read (UID precondition), nothing newer.
func (r *Reconciler) deleteExactly(ctx context.Context, obj client.Object) error {
	uid := obj.GetUID()
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("deleted an object made for an Environment", "kind", fmt.Sprintf("%T", obj), "name", obj.GetName())
	return nil
}
