package repositorycredentials

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"

	"golang.org/x/crypto/ssh"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/reconcilers/gitprobe"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Verdict is the outcome of checking a repository with its credentials; each
// part is nil when it passed.
type Verdict struct {
	URL, Credential *kernel.Refusal
}

// Verifier checks that a repository exists and accepts the credentials, as
// `git ls-remote` would.
type Verifier interface {
	Verify(ctx context.Context, repoURL string, creds argocd.RepositoryCredentials, trust Trust) Verdict
}

// Trust is what Argo CD trusts when it connects to a repository.
type Trust struct {
	// Roots: the system's and argocd-tls-certs-cm's CAs (https).
	Roots *x509.CertPool
	// KnownHosts: argocd-ssh-known-hosts-cm's host keys (ssh).
	KnownHosts string
}

// GitVerifier asks the repository for its refs with the credentials, as the
// first step of every git fetch does: over smart HTTP for https, by running
// git-upload-pack with the key for ssh. The tenant's project gets the
// repository only once it answered (tenantproject.Access).
type GitVerifier struct {
	// Egress limits the addresses dialled (nil: the fixed ranges refused).
	Egress *egress.Policy
}

// Verify implements Verifier.
func (g GitVerifier) Verify(ctx context.Context, repoURL string, creds argocd.RepositoryCredentials, trust Trust) Verdict {
	if u, err := url.Parse(repoURL); err == nil && u.Scheme == "https" {
		res := gitprobe.Refs(ctx, g.Egress, repoURL, creds.Username, creds.Password, trust.Roots)
		return verdict(repoURL, res, fmt.Sprintf("the repository %s refused the credentials (HTTP %d): check username and password in the Secret", repoURL, res.Status))
	}
	return verdict(repoURL, gitprobe.SSHRefs(ctx, g.Egress, repoURL, creds.SSHPrivateKey, trust.KnownHosts),
		fmt.Sprintf("the repository %s refused the ssh key: check sshPrivateKey in the Secret", repoURL))
}

// verdict reads a probe's result; refused says the credentials were refused.
func verdict(repoURL string, res gitprobe.Result, refused string) Verdict {
	switch res.Answer {
	case gitprobe.Readable:
		return Verdict{}
	case gitprobe.Refused:
		return Verdict{Credential: kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials, "%s", refused)}
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
