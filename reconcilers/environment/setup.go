package environment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// SetupWithManager registers the reconciler and its watches: Environments, the
// ManagedEnvironments they control, and the tenants' credentials Secrets
// (metadata only: the data is read uncached), so a changed credentials Secret
// is copied at once; the copy is also compared every RecheckInterval.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.Now == nil {
		r.Now = metav1.Now
	}
	if r.RecheckInterval == 0 {
		r.RecheckInterval = DefaultRecheckInterval
	}
	if r.RetryInterval == 0 {
		r.RetryInterval = DefaultRetryInterval
	}
	// Status writes (ours, and the ManagedEnvironment reconciler's) need no
	// other look; deletes always pass.
	specOrMeta := builder.WithPredicates(predicate.Or(
		predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	tenantSecrets, err := tenantsecret.Watch(mgr, v1.ManagedEnvironmentSecretType, r.usersOf)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("environment").
		For(&as.Environment{}, specOrMeta).
		// A ManagedEnvironment of ours edited or deleted by someone else is put back.
		Watches(&v1.GitOpsDeploymentManagedEnvironment{},
			handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &as.Environment{}, handler.OnlyControllerOwner()),
			specOrMeta).
		// The credentials Secret changed, or our copy of it was edited.
		WatchesRawSource(tenantSecrets).
		// The claim an Environment deploys through, and its target, changed.
		Watches(&as.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(r.claimUsers)).
		Watches(&as.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.usersOfClaim(ctx, obj.GetNamespace(), obj.(*as.DeploymentTarget).Spec.ClaimRef)
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// usersOf enqueues the Environments of the Secret's namespace whose
// credentials it is, or whose copy it is.
func (r *Reconciler) usersOf(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	var list as.EnvironmentList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		env := &list.Items[i]
		if u := env.Spec.UnstableConfigurationFields; (u != nil && u.ClusterCredentialsSecret == s.Name) || SecretName(env.Name) == s.Name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(env)})
		}
	}
	return out
}

func (r *Reconciler) claimUsers(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.usersOfClaim(ctx, obj.GetNamespace(), obj.GetName())
}

// usersOfClaim enqueues the Environments of the namespace that deploy through the claim.
func (r *Reconciler) usersOfClaim(ctx context.Context, namespace, claim string) []reconcile.Request {
	if claim == "" {
		return nil
	}
	var list as.EnvironmentList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Environments for a DeploymentTargetClaim", "claim", claim)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.Configuration.Target.DeploymentTargetClaim.ClaimName == claim {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
