package repositorycredentials

import (
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// Keys of the referenced Secret.
const (
	KeyURL           = "url"
	KeyUsername      = "username"
	KeyPassword      = "password"
	KeySSHPrivateKey = "sshPrivateKey"
)

// ValidateURL accepts https:// and ssh:// repository URLs with a host and
// without a password: credentials belong in the Secret, and a URL is shown in
// Argo CD, in conditions and in logs.
func ValidateURL(raw string) *kernel.Refusal {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "spec.url is not a URL: it must start with https:// or ssh://")
	}
	if u.Scheme != "https" && u.Scheme != "ssh" {
		return kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "spec.url must start with https:// or ssh://, not %q", u.Scheme+"://")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "spec.url must not contain a password: put the credentials in the Secret")
	}
	if u.Hostname() == "" {
		return kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL, "spec.url has no host")
	}
	return nil
}

// Credentials takes the credentials from the user's Secret, which must be of
// the repository-credential type, name the same repository as spec.url, and
// hold what the URL's scheme needs: username and password for https, a usable
// private key for ssh. Messages never include the Secret's values.
func Credentials(rc *v1.GitOpsDeploymentRepositoryCredentials, secret *corev1.Secret) (argocd.RepositoryCredentials, *kernel.Refusal) {
	none := argocd.RepositoryCredentials{}
	if secret.Type != v1.RepositoryCredentialSecretType {
		return none, kernel.Refuse(v1.RepositoryCredentialReasonSecretInvalidType,
			"Secret '%s' is of type %q: it must be of type %q", secret.Name, secret.Type, v1.RepositoryCredentialSecretType)
	}
	if !argocd.SameRepository(string(secret.Data[KeyURL]), rc.Spec.Repository) {
		return none, kernel.Refuse(v1.RepositoryCredentialReasonInvalidRepositoryURL,
			"the %s in Secret '%s' does not match spec.url %s: both must name the same repository", KeyURL, secret.Name, rc.Spec.Repository)
	}
	creds := argocd.RepositoryCredentials{
		Username:      string(secret.Data[KeyUsername]),
		Password:      string(secret.Data[KeyPassword]),
		SSHPrivateKey: string(secret.Data[KeySSHPrivateKey]),
	}
	if strings.HasPrefix(strings.TrimSpace(rc.Spec.Repository), "ssh://") {
		if creds.SSHPrivateKey == "" {
			return none, kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials, "Secret '%s' has no %s, which an ssh:// repository needs", secret.Name, KeySSHPrivateKey)
		}
		if err := checkSSHKey(creds.SSHPrivateKey); err != nil {
			return none, kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials, "Secret '%s': %s", secret.Name, err)
		}
		return argocd.RepositoryCredentials{SSHPrivateKey: creds.SSHPrivateKey}, nil
	}
	if creds.Username == "" || creds.Password == "" {
		return none, kernel.Refuse(v1.RepositoryCredentialReasonInvalidCredentials,
			"Secret '%s' needs both %s and %s for an https:// repository", secret.Name, KeyUsername, KeyPassword)
	}
	return argocd.RepositoryCredentials{Username: creds.Username, Password: creds.Password}, nil
}
