package repositorycredentials

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/netfailure"
)

// verifyTimeout bounds one check of a repository.
const verifyTimeout = 10 * time.Second

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
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	refs := strings.TrimSuffix(repoURL, "/") + "/info/refs?service=git-upload-pack"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, refs, nil)
	if err != nil {
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist: %s: %s", repoURL, err)}
	}
	req.SetBasicAuth(creds.Username, creds.Password)
	req.Header.Set("User-Agent", "git/2.0 (gitops-service)")
	c := &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: verifyTimeout,
		},
		CheckRedirect: sameOrigin,
	}
	resp, err := c.Do(req)
	if err != nil {
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist: %s: %s", repoURL, describe(err))}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-git-upload-pack-advertisement"):
		return Verdict{}
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Verdict{Credential: kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials,
			"the repository %s refused the credentials (HTTP %d): check username and password in the Secret", repoURL, resp.StatusCode)}
	case resp.StatusCode == http.StatusNotFound:
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "Repository does not exist: %s", repoURL)}
	default:
		return Verdict{URL: kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL,
			"Repository does not exist: %s: the server answered HTTP %d, not a git repository", repoURL, resp.StatusCode)}
	}
}

// sameOrigin follows a redirect only to the same scheme, host and port. Go
// sends the Basic-auth header again to a redirect on the same host name
// whatever its scheme and port, so https://h redirecting to http://h or to
// h:8080 would hand the credentials to plain http or to another service; a
// redirect to another host would go without them and say nothing about them.
// Not followed, the redirect's status is the answer (not a git repository).
func sameOrigin(r *http.Request, via []*http.Request) error {
	first := via[0].URL
	if len(via) >= 5 || r.URL.Scheme != "https" || r.URL.Scheme != first.Scheme || r.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// describe turns a connection error into a few fixed words (netfailure:
// the URL is the tenant's choice, nothing of the error is repeated).
func describe(err error) string {
	switch k := netfailure.Classify(err); k {
	case netfailure.UntrustedCertificate, netfailure.InvalidCertificate:
		return "TLS handshake failed: the server's certificate is not trusted: add its CA to Argo CD's argocd-tls-certs-cm (argocd cert add-tls)"
	case netfailure.Timeout:
		return fmt.Sprintf("timeout: no answer within %s", verifyTimeout)
	default:
		return k.String()
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
