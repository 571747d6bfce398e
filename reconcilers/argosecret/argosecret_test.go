package argosecret

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

var (
	repos    = Store{Namespace: "argocd", Kind: ownership.KindRepositoryCredentials}
	clusters = Store{Namespace: "argocd", Kind: ownership.KindManagedEnvironment}
)

// secret is a Secret labelled for an owner of kind, uid and name jane/<name>.
func secret(name, kind, uid, owner string, mut func(*corev1.Secret)) corev1.Secret {
	labels, annotations := ownership.Meta(kind, "jane", owner, uid)
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: labels, Annotations: annotations}}
	if mut != nil {
		mut(&s)
	}
	return s
}

// Which Secret is ours (written, deleted) and which is a collision (never touched).
func TestOurs(t *testing.T) {
	cases := []struct {
		name   string
		secret corev1.Secret
		uid    types.UID
		want   bool
	}{
		{"ours", secret("repo-u1", ownership.KindRepositoryCredentials, "u1", "a", nil), "u1", true},
		{"an earlier owner of the name", secret("repo-u1", ownership.KindRepositoryCredentials, "u0", "a", nil), "u1", false},
		{"another kind's", secret("repo-u1", ownership.KindManagedEnvironment, "u1", "a", nil), "u1", false},
		{"not managed by us", secret("repo-u1", ownership.KindRepositoryCredentials, "u1", "a", func(s *corev1.Secret) {
			s.Labels[ownership.LabelManagedBy] = "someone"
		}), "u1", false},
		{"unlabelled", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-u1"}}, "u1", false},
		{"no owner UID matches nothing", secret("repo-", ownership.KindRepositoryCredentials, "", "a", nil), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, repos.ours(&tc.secret, tc.uid))
		})
	}
}

// Which Secrets a CR's deletion, or its re-creation under the same name, takes.
func TestSelected(t *testing.T) {
	list := []corev1.Secret{
		secret("repo-u1", ownership.KindRepositoryCredentials, "u1", "a", nil),
		secret("repo-u0", ownership.KindRepositoryCredentials, "u0", "a", nil),
		secret("cluster-u1", ownership.KindManagedEnvironment, "u1", "a", nil),
		secret("foreign", ownership.KindRepositoryCredentials, "u2", "a", func(s *corev1.Secret) { delete(s.Labels, ownership.LabelManagedBy) }),
	}
	names := func(secrets []*corev1.Secret) []string {
		var out []string
		for _, s := range secrets {
			out = append(out, s.Name)
		}
		return out
	}
	assert.Equal(t, []string{"repo-u1", "repo-u0"}, names(repos.selected(list, ownership.AnyUID)), "gone: every Secret of ours for the name")
	assert.Equal(t, []string{"repo-u0"}, names(repos.selected(list, ownership.OtherUID("u1"))), "re-created: only the earlier CR's")
	assert.Equal(t, []string{"cluster-u1"}, names(clusters.selected(list, ownership.AnyUID)), "only the Store's kind")
	assert.Empty(t, repos.selected(nil, ownership.AnyUID))
}

// The Secrets the reconcilers write are the Store's: it finds their owner
// (for the watch) and takes them for ours (for writes and deletes); a copy
// of the labels in another tenant's name points at nobody.
func TestWrittenSecretsAreFoundAgain(t *testing.T) {
	rc := &v1.GitOpsDeploymentRepositoryCredentials{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "creds", UID: "rc-uid"},
		Spec: v1.GitOpsDeploymentRepositoryCredentialsSpec{Repository: "https://git.example.com/jane/app.git"}}
	env := &v1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod", UID: "env-uid"},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{APIURL: "https://cluster.example.com:6443"}}
	cases := []struct {
		name  string
		store Store
		sec   *corev1.Secret
		owner types.NamespacedName
		uid   types.UID
	}{
		{"repository", repos, argocd.RepositorySecret("argocd", rc, "tenant-p", argocd.RepositoryCredentials{Username: "u", Password: "p"}),
			types.NamespacedName{Namespace: "jane", Name: "creds"}, "rc-uid"},
		{"cluster", clusters, argocd.ClusterSecret("argocd", env, "tenant-p", argocd.ClusterCredentials{BearerToken: "t"}),
			types.NamespacedName{Namespace: "jane", Name: "prod"}, "env-uid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owner := tc.store.OwnerOf(tc.sec)
			require.NotNil(t, owner)
			assert.Equal(t, tc.owner, *owner)
			assert.True(t, tc.store.ours(tc.sec, tc.uid))
			other := repos
			if tc.store.Kind == repos.Kind {
				other = clusters
			}
			assert.Nil(t, other.OwnerOf(tc.sec), "another kind's Store does not take it")
			assert.False(t, other.ours(tc.sec, tc.uid))

			moved := tc.sec.DeepCopy()
			moved.Annotations[ownership.AnnotationOwnerName] = "bob/" + tc.owner.Name
			assert.Nil(t, tc.store.OwnerOf(moved), "an owner name outside the tenant label's namespace")
		})
	}
}
