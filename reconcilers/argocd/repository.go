package argocd

import (
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const (
	// SecretTypeRepository (value of LabelSecretType) makes a Secret an Argo CD repository.
	SecretTypeRepository = "repository"
)

// RepositoryCredentials are what Argo CD authenticates to a repository with:
// username and password, or an SSH private key.
type RepositoryCredentials struct {
	Username      string
	Password      string
	SSHPrivateKey string
}

// RepositorySecretName is the name of a RepositoryCredentials' Argo CD repository Secret.
func RepositorySecretName(repositoryCredentialsUID string) string {
	return "repo-" + repositoryCredentialsUID
}

// RepositorySecret returns the Argo CD repository Secret of a RepositoryCredentials,
// in the Argo CD namespace and scoped to the tenant's project: Argo CD gives
// project-scoped credentials only to that project's Applications, so another
// tenant deploying the same URL does not get them.
func RepositorySecret(argoNamespace string, rc *v1.GitOpsDeploymentRepositoryCredentials, project string, creds RepositoryCredentials) *corev1.Secret {
	labels, annotations := ownership.Meta(ownership.KindRepositoryCredentials, rc.Namespace, rc.Name, string(rc.UID))
	labels[LabelSecretType] = SecretTypeRepository
	data := map[string][]byte{
		"type":    []byte("git"),
		"url":     []byte(rc.Spec.Repository),
		"project": []byte(project),
	}
	if creds.SSHPrivateKey != "" {
		data["sshPrivateKey"] = []byte(creds.SSHPrivateKey)
	} else {
		data["username"] = []byte(creds.Username)
		data["password"] = []byte(creds.Password)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RepositorySecretName(string(rc.UID)),
			Namespace:   argoNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// SameRepository says whether two repository URLs name the same repository the
// way Argo CD matches them: scheme and host case-insensitive, a trailing "/" or
// ".git" ignored.
func SameRepository(a, b string) bool {
	na, nb := normalizeRepoURL(a), normalizeRepoURL(b)
	return na != "" && na == nb
}

func normalizeRepoURL(raw string) string {
	s := strings.TrimSpace(raw)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return strings.ToLower(s)
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}
