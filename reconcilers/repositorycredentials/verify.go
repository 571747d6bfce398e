package repositorycredentials

import (
	"context"
	"crypto/x509"
	"errors"
	"net/url"

	"golang.org/x/crypto/ssh"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Verdict is the outcome of checking a repository with its credentials; each
// part is nil when it passed.
type Verdict struct {
	URL, Credential *kernel.Refusal
	// Unverified says why nothing was checked (the conditions are Unknown).
	Unverified string
}

// Verifier checks that a repository exists and accepts the credentials, as
// `git ls-remote` would.
type Verifier interface {
	Verify(ctx context.Context, repoURL string, creds argocd.RepositoryCredentials, roots *x509.CertPool) Verdict
}

// HTTPVerifier asks an https repository for its refs (the first request of
// every git fetch over smart HTTP) with the credentials.
type HTTPVerifier struct{}

// Verify implements Verifier. ssh repositories are not contacted: their host
// keys live in Argo CD's known-hosts configuration, and Argo CD reports a
// failing connection on the GitOpsDeployments that use the repository.
func (HTTPVerifier) Verify(ctx context.Context, repoURL string, creds argocd.RepositoryCredentials, roots *x509.CertPool) Verdict {
	u, err := url.Parse(repoURL)
	if err != nil || u.Scheme != "https" {
		return Verdict{Unverified: "ssh repositories are not contacted by the GitOps Service; Argo CD reports connection errors on the GitOpsDeployments that use this repository"}
	}
	res := gitprobe.Refs(ctx, repoURL, creds.Username, creds.Password, roots)
	switch res.Answer {
	case gitprobe.Readable:
		return Verdict{}
	case gitprobe.Refused:
		return Verdict{Credential: kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials,
			"the repository %s refused the credentials (HTTP %d): check username and password in the Secret", repoURL, res.Status)}
	case gitprobe.NotFound:
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist: %s", repoURL)}
	case gitprobe.NotGit:
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL,
			"Repository does not exist: %s: the server answered HTTP %d, not a git repository", repoURL, res.Status)}
	default:
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist: %s: %s", repoURL, res.Detail)}
	}
}

// checkSSHKey says whether key is a private key Argo CD can use (PEM or
// OpenSSH format, without a passphrase).
func checkSSHKey(key string) error {
	_, err := ssh.ParseRawPrivateKey([]byte(key))
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return errors.New("sshPrivateKey is protected by a passphrase, which Argo CD cannot use")
	}
	if err != nil {
		return errors.New("sshPrivateKey is not a PEM or OpenSSH private key")
	}
	return nil
}
