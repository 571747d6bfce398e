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
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
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
	DefaultRetryInterval = kernel.RefusalRetry
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
// with the Environment's spec and credentials Secret. No finalizer: what we
// write carries the Environment's owner reference, and a deleted
// Environment's objects are removed here too, found by name.
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
	result, err := r.reconcileNormal(ctx, env)
	if kernel.Transient(err) {
		// Transient: the condition stays as it was until the retry.
		return kernel.Outcome(ctrl.Result{}, err)
	}
	r.setCondition(env, err)
	env.Status.ObservedGeneration = env.Generation
	kernel.SetReady(&env.Status.Conditions, err, kernel.Done(kernel.ReasonSucceeded, "the Environment is configured"), env.Generation, r.Now.Now())
	if refusal := kernel.AsRefusal(err); refusal != nil && refusal.After == 0 {
		refusal.After = r.RetryInterval
	}
	return kernel.Outcome(result, err)
}

// reconcileNormal writes env's Secret and ManagedEnvironment when env has
// usable credentials, and removes them when it has none or they are unusable
// (but not while it waits for, or lost, a claim's target). A working one is
// looked at again after RecheckInterval.
func (r *Reconciler) reconcileNormal(ctx context.Context, env *as.Environment) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(env)
	claim, dt, err := r.claim(ctx, env)
	if err != nil {
		return ctrl.Result{}, err
	}
	src, err := credentialsSource(env, claim, dt)
	if keeps(err) {
		return ctrl.Result{}, err
	}
	if src == nil {
		// The tenant's own namespace on the local cluster, or an Environment
		// we cannot deploy to: nothing of ours may point anywhere else.
		removed, rmErr := r.remove(ctx, key)
		if removed && rmErr == nil {
			r.Recorder.Eventf(env, corev1.EventTypeNormal, "ManagedEnvironmentDeleted",
				"Deleted GitOpsDeploymentManagedEnvironment %s: the Environment no longer has usable cluster credentials", ownership.ManagedEnvironmentName(env.Name))
		}
		return ctrl.Result{}, cmp.Or(rmErr, err)
	}
	kubeconfig, err := r.readCredentials(ctx, env, src)
	if kernel.AsRefusal(err) != nil {
		// Fail closed: the copy of credentials the user removed or broke goes.
		_, rmErr := r.remove(ctx, key)
		return ctrl.Result{}, cmp.Or(rmErr, err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	me, err := r.currentManagedEnvironment(ctx, env)
	if err != nil && kernel.AsRefusal(err) == nil {
		return ctrl.Result{}, err
	}
	secret, secretErr := r.currentSecret(ctx, env)
	if secretErr != nil && kernel.AsRefusal(secretErr) == nil {
		return ctrl.Result{}, secretErr
	}
	if refusal := cmp.Or(err, secretErr); refusal != nil {
		// A foreign object has one of our names: it is left alone, and ours go.
		_, rmErr := r.remove(ctx, key)
		return ctrl.Result{}, cmp.Or(rmErr, refusal)
	}
	secret, _, err = write(ctx, r.Client, "Secret", secret, desiredSecret(env, kubeconfig),
		func(cur, want *corev1.Secret) bool {
			return len(cur.Data) == 1 && bytes.Equal(cur.Data[KubeconfigKey], want.Data[KubeconfigKey])
		},
		func(updated, want *corev1.Secret) { updated.Data = want.Data })
	if err != nil {
		return ctrl.Result{}, err
	}
	desired := desiredManagedEnvironment(env, src, secret.ResourceVersion)
	_, created, err := write(ctx, r.Client, "GitOpsDeploymentManagedEnvironment", me, desired,
		func(cur, want *v1.GitOpsDeploymentManagedEnvironment) bool {
			return equality.Semantic.DeepEqual(cur.Spec, want.Spec)
		},
		func(updated, want *v1.GitOpsDeploymentManagedEnvironment) { updated.Spec = want.Spec })
	if created {
		r.Recorder.Eventf(env, corev1.EventTypeNormal, "ManagedEnvironmentCreated",
			"Created GitOpsDeploymentManagedEnvironment %s for the cluster %s", desired.Name, desired.Spec.APIURL)
	}
	return ctrl.Result{RequeueAfter: r.RecheckInterval}, err
}

// claim reads the DeploymentTargetClaim env deploys through and, once it is
// Bound, its DeploymentTarget; nil for what is not found or not named.
func (r *Reconciler) claim(ctx context.Context, env *as.Environment) (*as.DeploymentTargetClaim, *as.DeploymentTarget, error) {
	name := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	if name == "" {
		return nil, nil, nil
	}
	claim := &as.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, claim); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if claim.Status.Phase != as.DeploymentTargetClaimPhaseBound {
		return claim, nil, nil
	}
	dt := &as.DeploymentTarget{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: claim.Spec.TargetName}, dt); err != nil {
		return claim, nil, client.IgnoreNotFound(err)
	}
	return claim, dt, nil
}

// readCredentials reads the kubeconfig of the user's credentials Secret,
// uncached and only from env's own namespace.
func (r *Reconciler) readCredentials(ctx context.Context, env *as.Environment, src *Source) ([]byte, error) {
	name := src.CredentialsSecret
	secret, err := tenantsecret.Read(ctx, r.APIReader, env.Namespace, name, kernel.Refuse(as.EnvironmentReasonSecretNotFound,
		"the secret %s referenced by the Environment resource was not found in namespace %s", name, env.Namespace))
	if err != nil {
		return nil, err
	}
	if secret.Type != v1.ManagedEnvironmentSecretType && !src.AnySecretType {
		return nil, kernel.Refuse(as.EnvironmentReasonInvalidSecretType,
			"the secret %s referenced by the Environment resource has type '%s'; it must be of type '%s'", name, secret.Type, v1.ManagedEnvironmentSecretType)
	}
	if len(secret.Data[KubeconfigKey]) == 0 {
		return nil, kernel.Refuse(as.EnvironmentReasonMissingKubeConfigField,
			"the secret %s referenced by the Environment resource has no '%s' field", name, KubeconfigKey)
	}
	return secret.Data[KubeconfigKey], nil
}

// currentManagedEnvironment returns env's ManagedEnvironment, or nil. One of
// that name that is not ours is a refusal: it is never touched.
func (r *Reconciler) currentManagedEnvironment(ctx context.Context, env *as.Environment) (*v1.GitOpsDeploymentManagedEnvironment, error) {
	me := &v1.GitOpsDeploymentManagedEnvironment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: ownership.ManagedEnvironmentName(env.Name)}, me); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if err := r.checkOurs(ctx, env, me, "GitOpsDeploymentManagedEnvironment"); err != nil {
		return nil, err
	}
	return me, nil
}

// currentSecret returns env's copy of the credentials, or nil. One of that
// name that is not ours is a refusal: it is never touched (nor read further).
func (r *Reconciler) currentSecret(ctx context.Context, env *as.Environment) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: SecretName(env.Name)}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", env.Namespace, SecretName(env.Name), err)
	}
	if err := r.checkOurs(ctx, env, s, "Secret"); err != nil {
		return nil, err
	}
	return s, nil
}

// checkOurs refuses obj (of kind) when it is not ours for env. An object of
// ours made for an earlier Environment of the same name, or being deleted, is
// deleted (or waited for): kernel.ErrStaleCache.
func (r *Reconciler) checkOurs(ctx context.Context, env *as.Environment, obj client.Object, kind string) error {
	switch {
	case ownedBy(obj, string(env.UID)) && obj.GetDeletionTimestamp().IsZero():
		return nil
	case ownedByName(obj, env.Namespace, env.Name):
		if err := r.deleteExactly(ctx, obj); err != nil {
			return err
		}
		return kernel.ErrStaleCache
	}
	return kernel.Refuse(as.EnvironmentReasonNameCollision,
		"the %s %s exists in namespace %s and was not created by the GitOps Service for Environment '%s'; it is left untouched: delete or rename it",
		kind, obj.GetName(), env.Namespace, env.Name)
}

// write creates desired when current is nil, else updates current to it
// (set copies the content over) only when same says it changed; it returns
// what now stands, and whether it was created. A create that finds the name
// taken is kernel.ErrStaleCache: ours not yet in the cache, or someone
// else's: the next pass tells.
func write[T any, P interface {
	*T
	client.Object
}](ctx context.Context, c client.Client, kind string, current, desired P, same func(current, desired P) bool, set func(updated, desired P)) (P, bool, error) {
	if current == nil {
		if err := c.Create(ctx, desired); apierrors.IsAlreadyExists(err) {
			return nil, false, kernel.ErrStaleCache
		} else if err != nil {
			return nil, false, fmt.Errorf("creating %s %s/%s: %w", kind, desired.GetNamespace(), desired.GetName(), err)
		}
		return desired, true, nil
	}
	if same(current, desired) && argocd.HasMeta(current, desired) {
		return current, false, nil
	}
	updated := current.DeepCopyObject().(P)
	set(updated, desired)
	argocd.CopyMeta(updated, desired)
	if err := c.Update(ctx, updated); err != nil {
		return nil, false, fmt.Errorf("updating %s %s/%s: %w", kind, desired.GetNamespace(), desired.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("updated an object made for an Environment", "kind", kind, "name", desired.GetName())
	return updated, false, nil
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
