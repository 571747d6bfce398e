// Package repositorycredentials reconciles GitOpsDeploymentRepositoryCredentials
// into Argo CD repository Secrets scoped to the tenant's AppProject: it takes the
// credentials from the tenant's Secret, checks them against the repository, and
// reports the outcome on the ErrorOccurred, ValidRepositoryUrl and
// ValidRepositoryCredential conditions.
package repositorycredentials

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/argosecret"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/tenantsecret"
)

// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=managed-gitops.redhat.com,resources=gitopsdeploymentrepositorycredentials/finalizers,verbs=update
// A tenant's Secret is read one at a time, uncached, from the CR's own
// namespace; Secrets of the repository-credential type are watched (field
// selector on the type, data dropped from the cache) to act on changes at once.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// Repository Secrets are written, and Argo CD's trusted CAs read, only in the
// Argo CD namespace.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete,namespace=argocd
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get,namespace=argocd
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of the Reconciler's intervals.
const (
	// DefaultRecheckInterval: working credentials are checked again this often
	// (a revoked token shows up without any change here).
	DefaultRecheckInterval = 5 * time.Minute
	// DefaultRetryInterval: a refused CR is looked at again this often (the
	// repository may come back; a Secret of the wrong type is not watched).
	DefaultRetryInterval = kernel.UnwatchedRecheck
)

// Reconciler reconciles GitOpsDeploymentRepositoryCredentials.
type Reconciler struct {
	Client client.Client
	// APIReader reads the tenants' Secrets and Argo CD's CA ConfigMap, which are not cached.
	APIReader     client.Reader
	ArgoNamespace string
	Recorder      record.EventRecorder
	// Verifier checks a repository with its credentials (default GitVerifier).
	Verifier Verifier
	// RecheckInterval and RetryInterval: see the defaults.
	RecheckInterval, RetryInterval time.Duration
	// Now is the clock for condition times; tests may set it.
	Now kernel.Clock

	secrets argosecret.Store
}

// Reconcile brings one RepositoryCredentials' Argo CD repository Secret in line
// with its spec and the tenant's Secret. The finalizer goes on only once a
// Secret is written (argosecret.Store.Sync): a refused CR has nothing to
// clean up.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	rc := &v1.GitOpsDeploymentRepositoryCredentials{}
	// Gone: its Secret goes. Recreated under the same name: the old one's goes.
	if found, err := r.secrets.Fetch(ctx, req.NamespacedName, rc); !found || err != nil {
		return ctrl.Result{}, err
	}
	if !rc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.secrets.Finalize(ctx, rc, v1.FinalizerRepositoryCredentials)
	}
	patcher := kernel.NewStatusPatcher(r.Client, rc)
	defer patcher.Patch(ctx, rc, &err)
	verdict, err := r.reconcileNormal(ctx, rc)
	if kernel.Transient(err) {
		// The conditions stay as they were until the retry.
		return kernel.Outcome(ctrl.Result{}, err)
	}
	refusal := kernel.AsRefusal(err)
	for _, c := range conditions(refusal, verdict) {
		c.ObservedGeneration = rc.Generation
		warn := c.Type == v1.RepositoryCredentialConditionErrorOccurred && c.Status == metav1.ConditionTrue
		kernel.SetCondition(r.Recorder, rc, &rc.Status.Conditions, c, r.Now.Now(), warn)
	}
	refusal = firstRefusal(refusal, verdict)
	rc.Status.ObservedGeneration = rc.Generation
	kernel.SetReady(&rc.Status.Conditions, refusal.AsError(), readiness(verdict), rc.Generation, r.Now.Now())
	if refusal != nil {
		return kernel.Outcome(ctrl.Result{}, refusal.Retry(r.RetryInterval))
	}
	return ctrl.Result{RequeueAfter: r.RecheckInterval}, nil
}

// reconcileNormal writes the repository Secret when the tenant's Secret is
// usable and deletes it when not (a *kernel.Refusal), then checks the
// credentials against the repository.
func (r *Reconciler) reconcileNormal(ctx context.Context, rc *v1.GitOpsDeploymentRepositoryCredentials) (Verdict, error) {
	name := argocd.RepositorySecretName(string(rc.UID))
	current, collided, err := r.secrets.Current(ctx, name, rc.UID)
	if err != nil {
		return Verdict{}, err
	}
	if collided {
		return Verdict{}, collision(name)
	}
	creds, err := r.credentials(ctx, rc)
	if kernel.Transient(err) {
		return Verdict{}, err
	}
	refusal := kernel.AsRefusal(err)
	collided, err = r.secrets.Sync(ctx, rc, v1.FinalizerRepositoryCredentials, current, refusal, func(project string) *corev1.Secret {
		return argocd.RepositorySecret(r.ArgoNamespace, rc, project, creds)
	})
	if collided {
		refusal = collision(name)
	}
	if err != nil {
		return Verdict{}, err
	}
	if refusal != nil {
		return Verdict{}, refusal
	}
	roots, err := gitprobe.TrustedCAs(ctx, r.APIReader, r.ArgoNamespace, rc.Spec.Repository)
	if err != nil {
		return Verdict{}, err
	}
	knownHosts, err := gitprobe.KnownHosts(ctx, r.APIReader, r.ArgoNamespace)
	if err != nil {
		return Verdict{}, err
	}
	return r.Verifier.Verify(ctx, strings.TrimSpace(rc.Spec.Repository), creds, Trust{Roots: roots, KnownHosts: knownHosts}), nil
}

// credentials runs the checks that decide whether Argo CD gets the
// credentials: it returns them, or a *kernel.Refusal saying why not, or a
// transient error.
func (r *Reconciler) credentials(ctx context.Context, rc *v1.GitOpsDeploymentRepositoryCredentials) (argocd.RepositoryCredentials, error) {
	none := argocd.RepositoryCredentials{}
	if refusal := ValidateURL(rc.Spec.Repository); refusal != nil {
		return none, refusal
	}
	if older, err := r.olderDuplicate(ctx, rc); err != nil {
		return none, err
	} else if older != "" {
		return none, kernel.Refuse(v1.RepositoryCredentialReasonDuplicate,
			"GitOpsDeploymentRepositoryCredentials '%s' of this namespace already gives credentials for %s; delete one of them", older, rc.Spec.Repository)
	}
	name := rc.Spec.Secret
	if name == "" {
		return none, kernel.Refuse(v1.RepositoryCredentialReasonSecretNotSpecified, "spec.secret is empty: name the Secret holding the credentials")
	}
	secret, err := tenantsecret.Read(ctx, r.APIReader, rc.Namespace, name,
		kernel.Refuse(v1.RepositoryCredentialReasonSecretNotFound, "Secret '%s' was not found in namespace '%s'", name, rc.Namespace))
	if err != nil {
		return none, err
	}
	creds, refusal := Credentials(rc, secret)
	return creds, refusal.AsError()
}

// olderDuplicate returns the name of an older RepositoryCredentials of the
// namespace for the same repository: Argo CD would pick one of two project
// Secrets for a URL at random, so only the oldest is used.
func (r *Reconciler) olderDuplicate(ctx context.Context, rc *v1.GitOpsDeploymentRepositoryCredentials) (string, error) {
	var list v1.GitOpsDeploymentRepositoryCredentialsList
	if err := r.Client.List(ctx, &list, client.InNamespace(rc.Namespace)); err != nil {
		return "", fmt.Errorf("listing GitOpsDeploymentRepositoryCredentials of %s: %w", rc.Namespace, err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == rc.UID || !o.DeletionTimestamp.IsZero() || !argocd.SameRepository(o.Spec.Repository, rc.Spec.Repository) {
			continue
		}
		if kernel.Older(o, rc) {
			return o.Name, nil
		}
	}
	return "", nil
}

func collision(name string) *kernel.Refusal {
	return kernel.Refuse(v1.RepositoryCredentialReasonSecretNameCollision,
		"the Argo CD repository Secret %s exists and was not created by the GitOps Service for these credentials", name)
}
