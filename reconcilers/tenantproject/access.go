package tenantproject

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v2/util/git"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Access decides whether a tenant may have a repository in its AppProject,
// that is whether Argo CD may render it for the tenant: only when the tenant
// could fetch it itself, anonymously or with its own valid credentials.
// Argo CD's repo-server keeps one checkout per repository URL and skips the
// fetch (hence the credentials) when the revision asked for is already there,
// and it resolves a branch from a refs cache keyed by the URL alone: without
// this check a tenant naming another tenant's private repository, at a commit
// or at a branch while the refs are cached, got its manifests rendered from
// the other tenant's checkout. A repository not in the project is refused by
// Argo CD before any of that.
type Access struct {
	// Client reads the tenant's RepositoryCredentials (cached).
	Client client.Client
	// APIReader reads Argo CD's argocd-tls-certs-cm.
	APIReader     client.Reader
	ArgoNamespace string
	// AllowFileRepositories: file:// repositories (demos and tests only).
	AllowFileRepositories bool
	// Egress limits the addresses the default Probe dials (nil: the fixed
	// ranges refused).
	Egress *egress.Policy
	// Probe asks a repository for its refs without credentials
	// (gitprobe.Refs when nil).
	Probe func(ctx context.Context, repoURL string, roots *x509.CertPool) gitprobe.Result
	// Now is the clock of the anonymous answers kept; tests may set it.
	Now kernel.Clock

	// answers holds each repository URL's last answer to an anonymous probe.
	answers sync.Map
	asking  singleflight.Group
}

// How long an anonymous probe's answer stands: a public repository's, and any other.
const (
	publicFor = 5 * time.Minute
	otherFor  = 30 * time.Second
)

// NotReadableError says why a tenant may not use a repository. Its message
// is the same whether the repository is private or does not exist.
type NotReadableError struct {
	Repository, Why string
}

func (e *NotReadableError) Error() string {
	return fmt.Sprintf("repository %s cannot be read by this namespace: %s", e.Repository, e.Why)
}

// Check returns nil when namespace may use repoURL, a *NotReadableError when
// it may not, or another error when that could not be found out.
func (a *Access) Check(ctx context.Context, namespace, repoURL string) error {
	repo := strings.TrimSpace(repoURL)
	creds, err := a.credentials(ctx, namespace, repo)
	if err != nil {
		return err
	}
	w, why := decide(repo, creds, a.AllowFileRepositories)
	switch w {
	case admit:
		return nil
	case ask:
		if why, err = a.anonymously(ctx, namespace, repo); err != nil || why == "" {
			return err
		}
	case unlessHeld:
		if held, err := a.heldElsewhere(ctx, namespace, repo); err != nil || !held {
			return err
		}
	}
	if creds == nil {
		// Credentials Argo CD gives every project (a repository or
		// credential template Secret without a project): the platform
		// lets every tenant read the repository with them.
		if ok, err := a.platformWide(ctx, repo); err != nil || ok {
			return err
		}
	}
	return &NotReadableError{Repository: repo, Why: why}
}

// Revoked says whether a repository already in the tenant's project must
// leave it, from what is known for sure without asking anyone: an ssh
// repository named without the tenant's own key that another namespace now
// holds credentials for (admitted before they came, Argo CD's caches would
// render it from the other tenant's checkout). Anything less certain keeps
// it: a git host's bad minute must not stop deployments. (A repository the
// tenant has its own credentials for is allowed by Argo CD through their
// project-scoped Secret whatever the project lists: not decided here.)
func (a *Access) Revoked(ctx context.Context, namespace, repoURL string) (bool, error) {
	repo := strings.TrimSpace(repoURL)
	creds, err := a.credentials(ctx, namespace, repo)
	if err != nil || creds != nil {
		return false, err
	}
	if w, _ := decide(repo, nil, a.AllowFileRepositories); w != unlessHeld {
		return false, nil
	}
	if held, err := a.heldElsewhere(ctx, namespace, repo); err != nil || !held {
		return false, err
	}
	wide, err := a.platformWide(ctx, repo)
	return !wide, err
}

// anonymously says why repo is not public, "" when it is (or, unanswered,
// may be taken to be).
func (a *Access) anonymously(ctx context.Context, namespace, repo string) (string, error) {
	res, err := a.answer(ctx, repo)
	if err != nil {
		return "", err
	}
	why := anonymous(res)
	if unanswered(res) {
		// No answer: the repo-server, on the same network, most likely gets
		// none either, and Argo CD reports that. Unless another tenant holds
		// credentials for it, so its checkout may be on the repo-server.
		if held, err := a.heldElsewhere(ctx, namespace, repo); err != nil || !held {
			return "", err
		}
		return why + ", and another namespace has credentials for it", nil
	}
	return why, nil
}

// answer is repo's answer to an anonymous probe, asked again only once the
// last answer is older than publicFor (readable) or otherFor: however many
// CRs name a repository, and however often they are reconciled, the sidecar
// asks it at most that often.
func (a *Access) answer(ctx context.Context, repo string) (gitprobe.Result, error) {
	now := a.Now.Now().Time
	if v, ok := a.answers.Load(repo); ok {
		last := v.(answered)
		if age := now.Sub(last.at); age < otherFor || (last.Answer == gitprobe.Readable && age < publicFor) {
			return last.Result, nil
		}
	}
	// A burst of CRs naming one new repository asks it once.
	v, err, _ := a.asking.Do(repo, func() (any, error) {
		roots, err := gitprobe.TrustedCAs(ctx, a.APIReader, a.ArgoNamespace, repo)
		if err != nil {
			return gitprobe.Result{}, err
		}
		probe := a.Probe
		if probe == nil {
			probe = func(ctx context.Context, repoURL string, roots *x509.CertPool) gitprobe.Result {
				return gitprobe.Refs(ctx, a.Egress, repoURL, "", "", roots)
			}
		}
		res := probe(ctx, repo, roots)
		a.answers.Store(repo, answered{Result: res, at: now})
		return res, nil
	})
	if err != nil {
		return gitprobe.Result{}, err
	}
	return v.(gitprobe.Result), nil
}

type answered struct {
	gitprobe.Result
	at time.Time
}

// platformWide says whether Argo CD has credentials for repo that it gives
// every project: a repository Secret, or a credential template whose URL
// prefixes repo, without a project (matched as Argo CD matches them).
func (a *Access) platformWide(ctx context.Context, repo string) (bool, error) {
	var list corev1.SecretList
	sel := client.MatchingLabelsSelector{Selector: platformSecrets}
	if err := a.APIReader.List(ctx, &list, client.InNamespace(a.ArgoNamespace), sel); err != nil {
		return false, fmt.Errorf("listing Argo CD's repository Secrets: %w", err)
	}
	return slices.ContainsFunc(list.Items, func(s corev1.Secret) bool {
		url := string(s.Data["url"])
		if len(s.Data["project"]) > 0 || url == "" {
			return false
		}
		if s.Labels[argoSecretType] == "repo-creds" {
			return strings.HasPrefix(strings.ToLower(repo), strings.ToLower(url))
		}
		return git.SameURL(url, repo)
	}), nil
}

// argoSecretType is the label that makes a Secret one of Argo CD's repositories.
const argoSecretType = "argocd.argoproj.io/secret-type"

var platformSecrets = func() labels.Selector {
	req, err := labels.NewRequirement(argoSecretType, selection.In, []string{"repository", "repo-creds"})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}()

// heldElsewhere says whether another namespace has working credentials for repo.
func (a *Access) heldElsewhere(ctx context.Context, namespace, repo string) (bool, error) {
	var list v1.GitOpsDeploymentRepositoryCredentialsList
	if err := a.Client.List(ctx, &list); err != nil {
		return false, fmt.Errorf("listing GitOpsDeploymentRepositoryCredentials: %w", err)
	}
	return slices.ContainsFunc(list.Items, func(rc v1.GitOpsDeploymentRepositoryCredentials) bool {
		return rc.Namespace != namespace && argocd.SameRepository(rc.Spec.Repository, repo) && credentialsWhy(&rc) == ""
	}), nil
}

// credentials is the namespace's RepositoryCredentials for repo Argo CD uses
// (the oldest: the others are refused as duplicates), nil when none.
func (a *Access) credentials(ctx context.Context, namespace, repo string) (*v1.GitOpsDeploymentRepositoryCredentials, error) {
	var list v1.GitOpsDeploymentRepositoryCredentialsList
	if err := a.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing GitOpsDeploymentRepositoryCredentials of %s: %w", namespace, err)
	}
	var oldest *v1.GitOpsDeploymentRepositoryCredentials
	for i := range list.Items {
		rc := &list.Items[i]
		if rc.DeletionTimestamp.IsZero() && argocd.SameRepository(rc.Spec.Repository, repo) && (oldest == nil || kernel.Older(rc, oldest)) {
			oldest = rc
		}
	}
	return oldest, nil
}

// way is how a tenant's use of a repository is decided.
type way int

const (
	admit way = iota
	refuse
	// ask: an anonymous probe tells.
	ask
	// unlessHeld: nothing can be asked (ssh needs a key); admitted unless
	// another namespace holds credentials for it, so Argo CD may have it.
	unlessHeld
)

// decide says, from the URL and the tenant's credentials for it, how the
// tenant's use of repo is decided, and why it may not use it (refuse,
// unlessHeld).
func decide(repo string, creds *v1.GitOpsDeploymentRepositoryCredentials, allowFile bool) (way, string) {
	scheme := schemeOf(repo)
	switch {
	case scheme == "file":
		if allowFile {
			return admit, ""
		}
		return refuse, "file:// repositories are not allowed"
	case scheme == "git":
		// git daemon serves anyone who can reach it: Argo CD reads it for any tenant.
		return admit, ""
	case creds != nil:
		if why := credentialsWhy(creds); why != "" {
			return refuse, why
		}
		return admit, ""
	case scheme == "ssh":
		return unlessHeld, "another namespace has credentials for it: create a GitOpsDeploymentRepositoryCredentials in this namespace with a key that may read it"
	default:
		return ask, ""
	}
}

// schemeOf is repo's scheme in lower case, ssh for git's user@host:path.
func schemeOf(repo string) string {
	if u, err := url.Parse(repo); err == nil && u.Scheme != "" && strings.Contains(repo, "://") {
		return strings.ToLower(u.Scheme)
	}
	return "ssh"
}

// credentialsWhy says why the tenant's credentials do not (yet) let it use
// their repository, "" when they do: the repository accepted them (password
// or ssh key) at the CR's current generation.
func credentialsWhy(rc *v1.GitOpsDeploymentRepositoryCredentials) string {
	valid := meta.FindStatusCondition(rc.Status.Conditions, v1.RepositoryCredentialConditionValidCredential)
	failed := meta.FindStatusCondition(rc.Status.Conditions, v1.RepositoryCredentialConditionErrorOccurred)
	current := valid != nil && valid.ObservedGeneration == rc.Generation && rc.Status.ObservedGeneration == rc.Generation
	switch {
	case current && valid.Status == metav1.ConditionTrue && (failed == nil || failed.Status != metav1.ConditionTrue):
		return ""
	case !current:
		return fmt.Sprintf("its GitOpsDeploymentRepositoryCredentials '%s' are not checked yet", rc.Name)
	default:
		return fmt.Sprintf("its GitOpsDeploymentRepositoryCredentials '%s' are not valid (%s): see their conditions", rc.Name, valid.Reason)
	}
}

// unanswered: no answer, or one that says nothing about the repository (a
// server error, rate limiting): a git host's bad minute does not hold up a
// deployment of a public repository.
func unanswered(res gitprobe.Result) bool {
	return res.Answer == gitprobe.Failed || (res.Answer == gitprobe.NotGit && (res.Status >= 500 || res.Status == http.StatusTooManyRequests))
}

// anonymous says why a repository's answer to an anonymous probe does not
// make it public, "" when it does. A private repository and a missing one
// get the same words: the probe must not tell another tenant which exists.
func anonymous(res gitprobe.Result) string {
	switch res.Answer {
	case gitprobe.Readable:
		return ""
	case gitprobe.Refused, gitprobe.NotFound:
		return "it does not exist or needs credentials: create a GitOpsDeploymentRepositoryCredentials in this namespace with credentials for it"
	case gitprobe.NotGit:
		return fmt.Sprintf("the server answered HTTP %d, not a git repository", res.Status)
	default:
		return "it could not be reached (" + res.Detail + ")"
	}
}
