package environment

import (
	"cmp"
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// SetupWithManager registers the reconciler and its watches: Environments, the
// ManagedEnvironments they control, and the tenants' credentials Secrets
// (metadata only: the data is read uncached), so a changed credentials Secret
// is copied at once; the copy is also compared every RecheckInterval.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.RecheckInterval = cmp.Or(r.RecheckInterval, DefaultRecheckInterval)
	r.RetryInterval = cmp.Or(r.RetryInterval, DefaultRetryInterval)
	// Status writes (ours, and the ManagedEnvironment reconciler's) need no
	// other look; deletes always pass.
	specOrMeta := builder.WithPredicates(predicate.Or(
		predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	tenantSecrets, err := tenantsecret.Watch(mgr, v1.ManagedEnvironmentSecretType, usersOf(r.Client))
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
		Watches(&as.DeploymentTargetClaim{}, handler.EnqueueRequestsFromMapFunc(usersOfClaim(r.Client, (*as.DeploymentTargetClaim).GetName))).
		Watches(&as.DeploymentTarget{}, handler.EnqueueRequestsFromMapFunc(usersOfClaim(r.Client, func(dt *as.DeploymentTarget) string { return dt.Spec.ClaimRef }))).
		WithOptions(sharding.Sharded(ctx, &as.Environment{}, controller.Options{MaxConcurrentReconciles: concurrency})).
		Complete(r)
}

// usersOf enqueues the Environments of the Secret's namespace whose
// credentials it is, or whose copy it is.
func usersOf(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, envList, func(s *corev1.Secret, env *as.Environment) bool {
		u := env.Spec.UnstableConfigurationFields
		return (u != nil && u.ClusterCredentialsSecret == s.Name) || SecretName(env.Name) == s.Name
	})
}

// usersOfClaim enqueues the Environments of the namespace that deploy
// through the claim named claimOf(the object that changed).
func usersOfClaim[S client.Object](c client.Reader, claimOf func(S) string) handler.MapFunc {
	return kernel.MapListed(c, envList, func(changed S, env *as.Environment) bool {
		claim := claimOf(changed)
		return claim != "" && env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName == claim
	})
}

func envList() client.ObjectList { return &as.EnvironmentList{} }
