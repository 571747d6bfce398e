package argocd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

func repositoryCredentials(url string) *v1.GitOpsDeploymentRepositoryCredentials {
	return &v1.GitOpsDeploymentRepositoryCredentials{
		ObjectMeta: metav1.ObjectMeta{Name: "private-repo", Namespace: "jane", UID: "9a3b0000-0000-4000-8000-000000000004"},
		Spec:       v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: url, Secret: "private-repo-creds"},
	}
}

func TestRepositorySecret(t *testing.T) {
	cases := map[string]struct {
		rc    *v1.GitOpsDeploymentRepositoryCredentials
		creds RepositoryCredentials
	}{
		"repository-https": {rc: repositoryCredentials("https://git.example.com/jane/private.git"), creds: RepositoryCredentials{Username: "jane", Password: "pat"}},
		"repository-ssh":   {rc: repositoryCredentials("ssh://git@git.example.com/jane/private.git"), creds: RepositoryCredentials{SSHPrivateKey: "KEY"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := RepositorySecret("argocd", tc.rc, ProjectName("ns-uid"), tc.creds)
			assert.Equal(t, "repo-"+string(tc.rc.UID), s.Name)
			assert.Equal(t, "repository", s.Labels["argocd.argoproj.io/secret-type"])
			assert.Equal(t, ProjectName("ns-uid"), string(s.Data["project"]), "project-scoped: no other tenant gets these credentials")
			assert.True(t, ownership.IsOwnedBy(s.Labels, ownership.KindRepositoryCredentials, string(tc.rc.UID)))
			assert.False(t, ownership.IsOwnedBy(s.Labels, ownership.KindManagedEnvironment, string(tc.rc.UID)))
			golden(t, name, readable(t, s))
		})
	}
}

func TestSameRepository(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://git.example.com/jane/app", "https://git.example.com/jane/app", true},
		{"https://git.example.com/jane/app", "https://GIT.example.com/jane/app.git", true},
		{"https://git.example.com/jane/app/", "HTTPS://git.example.com/jane/app", true},
		{" https://git.example.com/jane/app ", "https://git.example.com/jane/app", true},
		{"https://git.example.com/jane/app", "https://git.example.com/Jane/app", false},
		{"https://git.example.com/jane/app", "https://git.example.com/jane/app2", false},
		{"https://git.example.com/jane/app", "ssh://git.example.com/jane/app", false},
		{"https://git.example.com:8443/jane/app", "https://git.example.com/jane/app", false},
		{"", "", false},
	} {
		assert.Equal(t, tc.same, SameRepository(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
	}
}
