// Package managedenvironment reconciles GitOpsDeploymentManagedEnvironments into
// Argo CD cluster Secrets: it checks the referenced credentials (only a bearer
// token and CA data are accepted), verifies them by connecting, optionally
// installs a ServiceAccount for Argo CD on the cluster, and reports the outcome
// on the ConnectionInitializationSucceeded condition.
package managedenvironment

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argosecret"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/kubeconfig"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentmanagedenvironments/finalizers,verbs=update
// A tenant's credentials Secret is read one at a time, uncached, and only from
// the environment's own namespace.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// Cluster Secrets are written only in the Argo CD namespace (a Role there;
// kustomize renames the namespace).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete,namespace=argocd
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of the Reconciler's intervals.
const (
	DefaultRecheckInterval = 5 * time.Minute
	DefaultRetryInterval   = kernel.RefusalRetry
	DefaultCleanupTimeout  = 2 * time.Minute
)

// Reconciler reconciles GitOpsDeploymentManagedEnvironments.
type Reconciler struct {
	Client client.Client
	// APIReader reads the tenants' credentials Secrets, which are not cached.
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// RemoteClient makes clients of target clusters (default NewRemoteClient).
	RemoteClient RemoteClientFunc
	// Egress limits the addresses of target clusters dialled (nil: loopback,
	// link-local and unspecified refused; see egress.Policy.ForAPIServers).
	Egress *egress.Policy
	// RecheckInterval is how often a connected environment is verified again;
	// RetryInterval how often a failing one is retried (a cluster that comes
	// back changes nothing we watch; a changed credentials Secret is watched).
	// CleanupTimeout is how long a deletion keeps trying to remove what was
	// installed on the target cluster.
	RecheckInterval, RetryInterval, CleanupTimeout time.Duration
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock

	secrets argosecret.Store
}

// Reconcile brings one ManagedEnvironment's Argo CD cluster Secret in line with
// its spec and credentials.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	env := &v1.GitOpsDeploymentManagedEnvironment{}
	// Gone (our finalizer was removed, or never added): nothing of it may stay
	// in Argo CD. Recreated under the same name: a new one.
	if found, err := r.secrets.Fetch(ctx, req.NamespacedName, env); !found || err != nil {
		return ctrl.Result{}, err
	}
	if !env.DeletionTimestamp.IsZero() {
		return kernel.Outcome(ctrl.Result{}, r.reconcileDelete(ctx, env))
	}
	// The finalizer goes on only before something is installed on the
	// cluster (credentials) or a cluster Secret is written (argosecret).
	patcher := kernel.NewStatusPatcher(r.Client, env)
	defer patcher.Patch(ctx, env, &err)
	err = r.reconcileNormal(ctx, env)
	if kernel.Transient(err) {
		// The condition stays as it was until the retry.
		return kernel.Outcome(ctrl.Result{}, err)
	}
	refusal := kernel.AsRefusal(err)
	kernel.SetCondition(r.Recorder, env, &env.Status.Conditions, condition(env, refusal), r.Now.Now(), refusal != nil)
	env.Status.ObservedGeneration = env.Generation
	kernel.SetReady(&env.Status.Conditions, err, kernel.Done(v1.ManagedEnvironmentReasonSucceeded, "Argo CD has a cluster for this environment"), env.Generation, r.Now.Now())
	if refusal != nil {
		refusal.Retry(r.RetryInterval)
	}
	return kernel.Outcome(ctrl.Result{RequeueAfter: r.RecheckInterval}, err)
}

// reconcileNormal writes the cluster Secret when the environment's
// credentials work, and deletes it when they do not: then a *kernel.Refusal
// says why.
func (r *Reconciler) reconcileNormal(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) error {
	current, err := r.currentClusterSecret(ctx, env)
	if err != nil {
		return err
	}
	creds, err := r.credentials(ctx, env, current)
	if kernel.Transient(err) {
		return err
	}
	refusal := kernel.AsRefusal(err)
	collided, err := r.secrets.Sync(ctx, env, v1.FinalizerManagedEnvironment, current, refusal, func(project string) *corev1.Secret {
		return argocd.ClusterSecret(r.ArgoNamespace, env, project, creds)
	})
	switch {
	case err != nil:
		return err
	case collided:
		return collision(argocd.ClusterSecretName(string(env.UID)))
	case refusal != nil:
		return refusal
	}
	return nil
}

// credentials runs the checks, in the original service's order (but the
// namespace list is checked before anything is done on the cluster), and
// returns what Argo CD should connect with, or a *kernel.Refusal saying why
// it may not connect, or a transient error.
func (r *Reconciler) credentials(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment, current *corev1.Secret) (argocd.ClusterCredentials, error) {
	none := argocd.ClusterCredentials{}
	if refusal := kubeconfig.ValidateAPIURL(env.Spec.APIURL); refusal != nil {
		return none, refusal
	}
	kc, err := r.readKubeconfig(ctx, env)
	if err != nil {
		return none, err
	}
	namespaces, refusal := kubeconfig.ValidateNamespaces(env.Spec.Namespaces)
	if refusal != nil {
		return none, refusal
	}
	user := argocd.ClusterCredentials{BearerToken: kc.Token, CAData: kc.CAData, Insecure: env.Spec.AllowInsecureSkipTLSVerify}
	userClient, err := r.RemoteClient(r.restConfig(env.Spec.APIURL, user))
	if err != nil {
		return none, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			"Unable to create a client of the cluster with the provided credentials: %s", describe(err))
	}
	creds, check := user, userClient
	if env.Spec.CreateNewServiceAccount {
		// What we install must be removable: the finalizer goes on first.
		if err := kernel.AddFinalizer(ctx, r.Client, env, v1.FinalizerManagedEnvironment); err != nil {
			return none, err
		}
		token, err := installServiceAccount(ctx, userClient, env.Namespace, env.UID, namespaces)
		if err != nil {
			return none, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToInstallServiceAccount,
				"Unable to install a ServiceAccount on the cluster with the credentials of Secret '%s': %s", env.Spec.ClusterCredentialsSecret, err)
		}
		creds = argocd.ClusterCredentials{BearerToken: token, CAData: kc.CAData, Insecure: user.Insecure, ServiceAccount: ServiceAccountRef(env.UID)}
		if check, err = r.RemoteClient(r.restConfig(env.Spec.APIURL, creds)); err != nil {
			return none, fmt.Errorf("creating a client of the cluster: %w", err)
		}
	} else if current != nil && current.Annotations[argocd.AnnotationServiceAccount] != "" {
		// createNewServiceAccount was turned off: what we installed goes.
		if err := uninstallServiceAccount(ctx, userClient, env.UID, namespaces); err != nil {
			kernel.Warning(r.Recorder, env, "ServiceAccountCleanupFailed", fmt.Sprintf(
				"createNewServiceAccount was turned off, but the ServiceAccount %s and its roles could not be removed from the cluster, remove them by hand: %s",
				current.Annotations[argocd.AnnotationServiceAccount], err))
		}
	}
	if msg := verify(ctx, check, namespaces); msg != "" {
		return none, kernel.Refuse(v1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, "%s", msg)
	}
	return creds, nil
}

// readKubeconfig reads the credentials Secret, uncached and only from the
// environment's own namespace, and parses its kubeconfig. A Secret that is
// missing or unusable is a *kernel.Refusal.
func (r *Reconciler) readKubeconfig(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) (kubeconfig.Kubeconfig, error) {
	name := env.Spec.ClusterCredentialsSecret
	secret, err := tenantsecret.Read(ctx, r.APIReader, env.Namespace, name, kernel.Refuse(v1.ManagedEnvironmentReasonSecretNotFound,
		"secret '%s' referenced by managed environment '%s' in '%s', could not be retrieved: not found", name, env.Name, env.Namespace))
	if err != nil {
		return kubeconfig.Kubeconfig{}, err
	}
	if secret.Type != v1.ManagedEnvironmentSecretType {
		return kubeconfig.Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonInvalidSecretType,
			"invalid secret type: %s (expected %s)", secret.Type, v1.ManagedEnvironmentSecretType)
	}
	data, ok := secret.Data[kubeconfig.KubeconfigKey]
	if !ok || len(data) == 0 {
		return kubeconfig.Kubeconfig{}, kernel.Refuse(v1.ManagedEnvironmentReasonMissingKubeConfigField, "missing %s field in Secret", kubeconfig.KubeconfigKey)
	}
	kc, refusal := kubeconfig.ParseKubeconfig(data, env.Spec.APIURL)
	return kc, refusal.AsError()
}

func collision(name string) *kernel.Refusal {
	return kernel.Refuse(v1.ManagedEnvironmentReasonClusterSecretNameCollision,
		"the Argo CD cluster Secret %s exists and was not created by the GitOps Service for this environment", name)
}

// currentClusterSecret returns the environment's cluster Secret, or nil; one
// of that name that is not ours is a refusal and is never touched.
func (r *Reconciler) currentClusterSecret(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) (*corev1.Secret, error) {
	name := argocd.ClusterSecretName(string(env.UID))
	current, collided, err := r.secrets.Current(ctx, name, env.UID)
	if err == nil && collided {
		return nil, collision(name)
	}
	return current, err
}

// reconcileDelete runs while an environment is being deleted: what was
// installed on the cluster is removed with the user's credentials (given up
// on, with an Event, when they no longer work), then the cluster Secret,
// then the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) error {
	if !controllerutil.ContainsFinalizer(env, v1.FinalizerManagedEnvironment) {
		return r.secrets.Finalize(ctx, env, v1.FinalizerManagedEnvironment)
	}
	current, err := r.currentClusterSecret(ctx, env)
	if err != nil && kernel.AsRefusal(err) == nil {
		return err
	}
	if env.Spec.CreateNewServiceAccount || (current != nil && current.Annotations[argocd.AnnotationServiceAccount] != "") {
		permanent, err := r.cleanupTarget(ctx, env)
		if err != nil {
			msg := "Unable to remove the ServiceAccount and roles created on the cluster: " + err.Error()
			if !permanent && time.Since(env.DeletionTimestamp.Time) < r.CleanupTimeout {
				// The Event says what failed; the cluster's state is not
				// watched, so look again until CleanupTimeout.
				kernel.Warning(r.Recorder, env, "CleanupFailed", msg)
				return kernel.Wait("CleanupFailed", kernel.UnwatchedRecheck, "the target cluster to allow the cleanup")
			}
			kernel.Warning(r.Recorder, env, "CleanupAbandoned",
				msg+". Giving up: remove ServiceAccount "+ServiceAccountRef(env.UID)+" and its roles from the cluster by hand.")
			ctrl.LoggerFrom(ctx).Info("gave up removing the ServiceAccount from the target cluster", "serviceAccount", ServiceAccountRef(env.UID), "error", err.Error())
		}
	}
	return r.secrets.Finalize(ctx, env, v1.FinalizerManagedEnvironment)
}

// cleanupTarget removes our ServiceAccount, roles and token from the cluster
// with the user's credentials. permanent says that retrying cannot help (the
// credentials are gone or unusable).
func (r *Reconciler) cleanupTarget(ctx context.Context, env *v1.GitOpsDeploymentManagedEnvironment) (permanent bool, err error) {
	if refusal := kubeconfig.ValidateAPIURL(env.Spec.APIURL); refusal != nil {
		return true, refusal
	}
	kc, err := r.readKubeconfig(ctx, env)
	if refusal := kernel.AsRefusal(err); refusal != nil {
		return true, errors.New(refusal.Message)
	} else if err != nil {
		return false, err
	}
	namespaces, _ := kubeconfig.ValidateNamespaces(env.Spec.Namespaces)
	c, err := r.RemoteClient(r.restConfig(env.Spec.APIURL, argocd.ClusterCredentials{BearerToken: kc.Token, CAData: kc.CAData, Insecure: env.Spec.AllowInsecureSkipTLSVerify}))
	if err != nil {
		return true, errors.New(describe(err))
	}
	return false, uninstallServiceAccount(ctx, c, env.UID, namespaces)
}
