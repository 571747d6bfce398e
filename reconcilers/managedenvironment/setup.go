package managedenvironment

import (
	"cmp"
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argosecret"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
	"github.com/gitops-service/gitops-service/reconcilers/sharding"
)

// SetupWithManager registers the reconciler, its index and watches. The
// manager's cache must hold only our Secrets of the Argo CD namespace (see
// extension/sidecar); the tenants' Secrets are watched without their data and
// read uncached.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if r.RemoteClient == nil {
		r.RemoteClient = NewRemoteClient
	}
	r.RecheckInterval = cmp.Or(r.RecheckInterval, DefaultRecheckInterval)
	r.RetryInterval = cmp.Or(r.RetryInterval, DefaultRetryInterval)
	r.CleanupTimeout = cmp.Or(r.CleanupTimeout, DefaultCleanupTimeout)
	r.secrets = argosecret.Store{
		Client: r.Client, APIReader: r.APIReader, Namespace: r.ArgoNamespace,
		Kind: ownership.KindManagedEnvironment, Index: "managedenvironment.owner",
	}
	// A fixed or rotated kubeconfig is used at once, not at the next retry or recheck.
	b, err := r.secrets.Controller(ctx, mgr, "managedenvironment", &v1.GitOpsDeploymentManagedEnvironment{},
		v1.ManagedEnvironmentSecretType, usersOf(r.Client))
	if err != nil {
		return err
	}
	return b.WithOptions(sharding.Sharded(ctx, &v1.GitOpsDeploymentManagedEnvironment{}, controller.Options{MaxConcurrentReconciles: concurrency})).Complete(r)
}

// usersOf enqueues the ManagedEnvironments of the Secret's namespace that name it.
func usersOf(c client.Reader) handler.MapFunc {
	return kernel.MapListed(c, func() client.ObjectList { return &v1.GitOpsDeploymentManagedEnvironmentList{} },
		func(s *corev1.Secret, env *v1.GitOpsDeploymentManagedEnvironment) bool {
			return env.Spec.ClusterCredentialsSecret == s.Name
		})
}
