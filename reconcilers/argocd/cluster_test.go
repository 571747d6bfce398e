package argocd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v2/util/db"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

func managedEnvironment(mutate func(*v1.GitOpsDeploymentManagedEnvironment)) *v1.GitOpsDeploymentManagedEnvironment {
	env := &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "jane", UID: "7c1e5f3a-0000-4000-8000-000000000002"},
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL:                   "https://api.staging.example.com:6443",
			ClusterCredentialsSecret: "staging-kubeconfig",
		},
	}
	if mutate != nil {
		mutate(env)
	}
	return env
}

// readableSecret is a cluster Secret with its data as text and its config
// decoded, so the golden files can be reviewed.
type readableSecret struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Type     corev1.SecretType `json:"type"`
	Data     map[string]string `json:"data"`
	Config   map[string]any    `json:"config"`
}

func readable(t *testing.T, s *corev1.Secret) readableSecret {
	t.Helper()
	r := readableSecret{Metadata: s.ObjectMeta, Type: s.Type, Data: map[string]string{}}
	for k, v := range s.Data {
		if k == "config" {
			require.NoError(t, json.Unmarshal(v, &r.Config), "config is JSON")
			continue
		}
		r.Data[k] = string(v)
	}
	return r
}

func TestClusterSecret(t *testing.T) {
	project := ProjectName("ns-uid")
	cases := map[string]struct {
		env   *v1.GitOpsDeploymentManagedEnvironment
		creds ClusterCredentials
	}{
		"cluster-token-ca": {env: managedEnvironment(nil), creds: ClusterCredentials{BearerToken: "sha256~token", CAData: []byte(testCA)}},
		"cluster-insecure": {
			env: managedEnvironment(func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.AllowInsecureSkipTLSVerify = true
			}),
			// The CA is dropped: client-go refuses a CA with insecure.
			creds: ClusterCredentials{BearerToken: "sha256~token", CAData: []byte(testCA), Insecure: true},
		},
		"cluster-namespaces": {
			env: managedEnvironment(func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.Namespaces = []string{"team-b", "team-a", "team-b", ""}
				e.Spec.ClusterResources = true
			}),
			creds: ClusterCredentials{BearerToken: "sha256~token", CAData: []byte(testCA)},
		},
		"cluster-service-account": {
			env: managedEnvironment(func(e *v1.GitOpsDeploymentManagedEnvironment) {
				e.Spec.CreateNewServiceAccount = true
				e.Spec.Namespaces = []string{"team-a"}
			}),
			creds: ClusterCredentials{BearerToken: "sa-token", CAData: []byte(testCA), ServiceAccount: "kube-system/argocd-manager-7c1e5f3a-0000-4000-8000-000000000002"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := ClusterSecret("argocd", tc.env, project, tc.creds)
			assert.Equal(t, "managed-env-"+string(tc.env.UID), s.Name)
			assert.Equal(t, "argocd", s.Namespace)
			assert.Equal(t, "cluster", s.Labels["argocd.argoproj.io/secret-type"])
			// What docs/tenant-safety.md gives admins' cluster generators leaves it out.
			admins, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "managed-gitops.redhat.com/tenant-cluster", Operator: metav1.LabelSelectorOpDoesNotExist}}})
			require.NoError(t, err)
			assert.False(t, admins.Matches(labels.Set(s.Labels)), "an admin's cluster generator selects a tenant's cluster")
			assert.True(t, ownership.IsOwnedBy(s.Labels, ownership.KindManagedEnvironment, string(tc.env.UID)))
			assert.False(t, ownership.IsOwnedBy(s.Labels, ownership.KindGitOpsDeployment, string(tc.env.UID)))
			assert.Equal(t, ClusterServer(tc.env.Spec.APIURL, string(tc.env.UID)), string(s.Data["server"]),
				"GitOpsDeployments and the AppProject name the cluster by this server")
			golden(t, name, readable(t, s))
		})
	}
}

// TestClusterSecretAsArgoCDReadsIt reads the Secret with Argo CD's own code, so a
// format mistake shows here and not only in the end-to-end suite.
func TestClusterSecretAsArgoCDReadsIt(t *testing.T) {
	env := managedEnvironment(func(e *v1.GitOpsDeploymentManagedEnvironment) {
		e.Spec.Namespaces = []string{"team-b", "team-a"}
		e.Spec.ClusterResources = true
	})
	s := ClusterSecret("argocd", env, "tenant-project", ClusterCredentials{BearerToken: "tok", CAData: []byte(testCA)})
	c, err := db.SecretToCluster(s)
	require.NoError(t, err)
	assert.Equal(t, "https://api.staging.example.com:6443?managedEnvironment="+string(env.UID), c.Server)
	assert.Equal(t, "gitops-service:jane/staging", c.Name)
	assert.Equal(t, "tenant-project", c.Project)
	assert.Equal(t, []string{"team-a", "team-b"}, c.Namespaces)
	assert.True(t, c.ClusterResources)
	assert.Equal(t, "tok", c.Config.BearerToken)
	assert.Equal(t, []byte(testCA), c.Config.TLSClientConfig.CAData)
	assert.False(t, c.Config.TLSClientConfig.Insecure)
	assert.Nil(t, c.Config.ExecProviderConfig)

	// The REST config Argo CD builds talks to the API server itself: client-go
	// drops the query that makes the server URL unique.
	cfg, err := c.RawRestConfig()
	require.NoError(t, err)
	assert.Equal(t, c.Server, cfg.Host)
	assert.Equal(t, "tok", cfg.BearerToken)

	// Without namespaces the cluster is cluster-wide and clusterResources is unset.
	c, err = db.SecretToCluster(ClusterSecret("argocd", managedEnvironment(nil), "p", ClusterCredentials{BearerToken: "tok", Insecure: true}))
	require.NoError(t, err)
	assert.Empty(t, c.Namespaces)
	assert.False(t, c.ClusterResources)
	assert.True(t, c.Config.TLSClientConfig.Insecure)
	assert.Empty(t, c.Config.TLSClientConfig.CAData)
}

func TestClusterName(t *testing.T) {
	assert.Equal(t, "gitops-service:jane/staging", ClusterName(managedEnvironment(nil)))
	long := managedEnvironment(func(e *v1.GitOpsDeploymentManagedEnvironment) {
		e.Namespace = strings.Repeat("n", 60)
		e.Name = strings.Repeat("e", 60)
	})
	name := ClusterName(long)
	assert.LessOrEqual(t, len(name), maxClusterNameLength)
	assert.True(t, strings.HasPrefix(name, ClusterNamePrefix), name)
	assert.True(t, strings.HasSuffix(name, "-7c1e5f3a"), name)
	other := long.DeepCopy()
	other.UID = "8d2f0000-0000-4000-8000-000000000003"
	assert.NotEqual(t, name, ClusterName(other), "shortened names stay distinct")
}

// A tenant picks its namespace and the environment's name: no choice of them
// gives a name an admin's cluster has (Argo CD fails or mixes up two clusters
// of one name), nor another tenant's.
func TestClusterNamesCannotCollide(t *testing.T) {
	admins := []string{"prod-east", "in-cluster", "prod", "east", "prod/east", "prod-east-7c1e5f3a",
		"default/api-crc-testing:6443/kubeadmin", "arn:aws:eks:eu-west-1:1234:cluster/prod"}
	envs := []struct{ ns, name string }{
		{"prod", "east"}, {"prod-east", "x"}, {"in", "cluster"}, {"default", "api-crc-testing"},
		{"jane", "a.b"}, {"jane-a", "b"}, {"jane", "a-b"},
	}
	seen := map[string]string{}
	for i, e := range envs {
		env := managedEnvironment(func(m *v1.GitOpsDeploymentManagedEnvironment) {
			m.Namespace, m.Name = e.ns, e.name
			m.UID = types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
		})
		name := ClusterName(env)
		assert.True(t, strings.HasPrefix(name, ClusterNamePrefix), name)
		assert.NotContains(t, admins, name, "tenant %s, environment %s", e.ns, e.name)
		if prev, ok := seen[name]; ok {
			t.Errorf("%s/%s and %s have the same cluster name %q", e.ns, e.name, prev, name)
		}
		seen[name] = e.ns + "/" + e.name
		assert.Equal(t, name, ClusterName(env.DeepCopy()), "stable")
	}
	for _, a := range admins {
		assert.False(t, strings.HasPrefix(a, ClusterNamePrefix))
	}
}

// The server URL pattern in an AppProject destination is a glob: the query's '?'
// matches itself, and the UID keeps other environments' clusters out.
func TestClusterServerMatchesOnlyItsProjectDestination(t *testing.T) {
	env := managedEnvironment(nil)
	server := ClusterServer(env.Spec.APIURL, string(env.UID))
	proj := AppProject("argocd", Tenant{Namespace: "jane", UID: "ns-uid", Destinations: []Destination{{Server: server, Namespace: "team-a"}}})
	permitted := func(server, ns string) bool {
		ok, err := proj.IsDestinationPermitted(argov1alpha1.ApplicationDestination{Server: server, Namespace: ns},
			func(string) ([]*argov1alpha1.Cluster, error) { return nil, nil })
		require.NoError(t, err)
		return ok
	}
	assert.True(t, permitted(server, "team-a"))
	assert.False(t, permitted(server, "team-b"))
	assert.False(t, permitted(ClusterServer(env.Spec.APIURL, "8d2f0000-0000-4000-8000-000000000003"), "team-a"))
	assert.False(t, permitted(env.Spec.APIURL, "team-a"))
}
