package promotionpreview

import (
	"errors"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-service/gitops-service/reconcilers/argocd"
)

// TestPermission decides what a preview may read and dry-run on the
// tenant's projects as tenantproject makes them (and on hand-made ones for
// the lists our projects leave empty), with Argo CD's own checks and words.
func TestPermission(t *testing.T) {
	const remote = "https://remote.example.com?managedEnvironment=me-uid"
	tenant := argocd.AppProject("argocd", argocd.Tenant{Namespace: "jane", UID: "uid",
		Destinations: []argocd.Destination{{Server: remote, Namespace: "jane-staging"}, {Server: remote, Namespace: "jane-prod"}}})
	withSpec := func(change func(*argov1alpha1.AppProjectSpec)) *argov1alpha1.AppProject {
		p := tenant.DeepCopy()
		change(&p.Spec)
		return p
	}
	local := scope{Project: tenant, Server: argocd.LocalServer, Namespace: "jane", Local: true}
	onRemote := scope{Project: tenant, Server: remote, Namespace: "jane-staging"}
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	clusterRole := schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	namespace := schema.GroupKind{Kind: "Namespace"}
	const proj = "gitops-tenant-uid"
	tests := []struct {
		name string
		s    scope
		gk   schema.GroupKind
		ns   string
		want string
	}{
		{"local: the tenant's namespace", local, deployment, "jane", ""},
		{"local: another tenant's namespace", local, deployment, "john", "namespace john is not permitted in project '" + proj + "'"},
		{"local: Argo CD's namespace", local, schema.GroupKind{Kind: "Secret"}, "argocd", "namespace argocd is not permitted in project '" + proj + "'"},
		{"local: a ClusterRole", local, clusterRole, "", "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project " + proj},
		{"local: a Namespace", local, namespace, "", "resource :Namespace is not permitted in project " + proj},
		{"local: a cluster-scoped kind a project whitelists is still not previewed",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) {
				s.ClusterResourceWhitelist = []metav1.GroupKind{{Group: "*", Kind: "*"}}
			}), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			clusterRole, "", "cluster-scoped resource rbac.authorization.k8s.io:ClusterRole is not previewed: on Argo CD's own cluster a preview reads and dry-runs only namespace jane, the Environment's"},
		{"local: a namespace a project permits besides the Environment's is still not previewed",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) {
				s.Destinations = append(s.Destinations, argov1alpha1.ApplicationDestination{Server: argocd.LocalServer, Namespace: "jane-extra"})
			}), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			deployment, "jane-extra", "namespace jane-extra is not previewed: on Argo CD's own cluster a preview reads and dry-runs only namespace jane, the Environment's"},
		{"local: a namespaced kind the project blacklists",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) {
				s.NamespaceResourceBlacklist = []metav1.GroupKind{{Group: "", Kind: "ResourceQuota"}}
			}), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			schema.GroupKind{Kind: "ResourceQuota"}, "jane", "resource :ResourceQuota is not permitted in project " + proj},
		{"local: a namespaced kind outside the project's whitelist",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) {
				s.NamespaceResourceWhitelist = []metav1.GroupKind{{Group: "", Kind: "ConfigMap"}}
			}), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			deployment, "jane", "resource apps:Deployment is not permitted in project " + proj},
		{"local: an empty whitelist permits nothing",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) { s.NamespaceResourceWhitelist = []metav1.GroupKind{} }), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			deployment, "jane", "resource apps:Deployment is not permitted in project " + proj},
		{"remote: the Environment's namespace", onRemote, deployment, "jane-staging", ""},
		{"remote: another namespace of the Environment's cluster the project permits", onRemote, deployment, "jane-prod", ""},
		{"remote: a namespace the project does not permit", onRemote, deployment, "kube-system", "namespace kube-system is not permitted in project '" + proj + "'"},
		{"remote: a ClusterRole", onRemote, clusterRole, "", "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project " + proj},
		{"another cluster's destination does not count", scope{Project: tenant, Server: "https://other.example.com", Namespace: "jane-staging"}, deployment, "jane-staging",
			"namespace jane-staging is not permitted in project '" + proj + "'"},
		{"a project without destinations permits nothing", scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) { s.Destinations = nil }), Server: argocd.LocalServer, Namespace: "jane", Local: true},
			deployment, "jane", "namespace jane is not permitted in project '" + proj + "'"},
		{"a project of its own clusters only asks for them",
			scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) { s.PermitOnlyProjectScopedClusters = true }), Server: remote, Namespace: "jane-staging",
				Clusters: func(string) ([]*argov1alpha1.Cluster, error) {
					return []*argov1alpha1.Cluster{{Name: "another", Server: "https://another.example.com"}}, nil
				}},
			deployment, "jane-staging", "namespace jane-staging is not permitted in project '" + proj + "'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.permission(tt.gk, tt.ns)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	// Argo CD's database failing to list the project's clusters is an error, not a permission.
	s := scope{Project: withSpec(func(s *argov1alpha1.AppProjectSpec) { s.PermitOnlyProjectScopedClusters = true }), Server: remote, Namespace: "jane-staging",
		Clusters: func(string) ([]*argov1alpha1.Cluster, error) { return nil, errors.New("down") }}
	_, err := s.permission(deployment, "jane-staging")
	assert.Error(t, err)
}

// Issue 33: on Argo CD's own cluster a preview reads as the application
// controller; it reads only kinds the tenant's own role may get and list.
func TestTenantReads(t *testing.T) {
	edit := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services", "pods"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: []string{"*"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get"}},
		{APIGroups: []string{"example.com"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	}
	local := scope{Namespace: "jane", Local: true, TenantRole: "edit", TenantRules: edit}
	for _, tc := range []struct {
		gr schema.GroupResource
		ok bool
	}{
		{schema.GroupResource{Resource: "configmaps"}, true},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{schema.GroupResource{Group: "example.com", Resource: "widgets"}, true},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, false},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, false}, // get, not list
		{schema.GroupResource{Group: "apps", Resource: "daemonsets"}, false},
		{schema.GroupResource{Group: "other.example.com", Resource: "widgets"}, false},
	} {
		msg := local.tenantReads(tc.gr)
		if tc.ok {
			assert.Empty(t, msg, tc.gr)
			continue
		}
		assert.Contains(t, msg, "ClusterRole edit", tc.gr)
		assert.Contains(t, msg, tc.gr.String(), tc.gr)
	}
	none := scope{Namespace: "jane", Local: true, TenantRole: "edit"}
	assert.NotEmpty(t, none.tenantReads(schema.GroupResource{Resource: "configmaps"}), "no role: nothing is read")
	remote := scope{Namespace: "jane-staging"}
	assert.Empty(t, remote.tenantReads(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}), "a remote cluster: the Environment's own credentials bound what is read")
}
