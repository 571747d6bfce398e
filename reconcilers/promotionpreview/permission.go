package promotionpreview

import (
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// scope is where a preview may act: the tenant's project and the
// Environment's destination, and whether the cluster is Argo CD's own (where
// the preview acts as Argo CD's application controller, not with the
// Environment's own credentials).
type scope struct {
	Project *argov1alpha1.AppProject
	// Server and Namespace are the Environment's destination.
	Server, Namespace string
	Local             bool
	// Clusters are the project's clusters (Argo CD's database), asked only
	// for a project that permits only its own clusters.
	Clusters func(project string) ([]*argov1alpha1.Cluster, error)
	// TenantRole and TenantRules, on Argo CD's own cluster (Local), are the
	// ClusterRole that stands for the tenant in its namespace and its rules:
	// the preview reads there as Argo CD's application controller, which may
	// read everything, so it reads only kinds the tenant's role may get and
	// list itself.
	TenantRole  string
	TenantRules []rbacv1.PolicyRule
}

// DefaultTenantRole is the tenant's identity in its own namespace for
// previews: the aggregated edit ClusterRole, what the namespace's developers
// hold (the shipped tenant roles aggregate into it). A PromotionPreview
// records no requester, so no Kubernetes user could be asked about; the
// role's rules, as the API server aggregated them, are checked with RBAC's
// own rule comparison.
const DefaultTenantRole = "edit"

// tenantReads says why the preview may not read resource gr of the tenant's
// namespace on Argo CD's own cluster, or "" when the tenant's role may get
// and list it there (or the cluster is not Argo CD's own: the Environment's
// own credentials bound what is read there).
func (s scope) tenantReads(gr schema.GroupResource) string {
	if !s.Local {
		return ""
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{gr.Group}, Resources: []string{gr.Resource}, Verbs: []string{"get", "list"}}}
	if ok, _ := validation.Covers(s.TenantRules, want); ok {
		return ""
	}
	return fmt.Sprintf("resource %s is not previewed: the tenant's own role (ClusterRole %s) in namespace %s may not get and list it", gr, s.TenantRole, s.Namespace)
}

// permission says why a preview may neither read nor dry-run an object of
// kind gk in namespace ns ("" for a cluster-scoped one), or "" when it may.
// It refuses what Argo CD's sync refuses, with Argo CD's own checks and words
// (the application controller's permission validator): a kind the project's
// cluster or namespace resource lists do not permit, a namespace outside the
// project's destinations. On Argo CD's own cluster it also refuses all but
// the Environment's destination namespace, cluster-scoped objects included:
// the controller's identity may read and write everything there.
func (s scope) permission(gk schema.GroupKind, ns string) (string, error) {
	namespaced := ns != ""
	if !s.Project.IsGroupKindPermitted(gk, namespaced) {
		return fmt.Sprintf("resource %s:%s is not permitted in project %s", gk.Group, gk.Kind, s.Project.Name), nil
	}
	if namespaced {
		ok, err := s.Project.IsDestinationPermitted(argov1alpha1.ApplicationDestination{Server: s.Server, Namespace: ns}, s.Clusters)
		if err != nil {
			return "", err
		}
		if !ok {
			return fmt.Sprintf("namespace %v is not permitted in project '%s'", ns, s.Project.Name), nil
		}
	}
	if s.Local && ns != s.Namespace {
		where := "namespace " + ns
		if !namespaced {
			where = "cluster-scoped resource " + gk.Group + ":" + gk.Kind
		}
		return fmt.Sprintf("%s is not previewed: on Argo CD's own cluster a preview reads and dry-runs only namespace %s, the Environment's", where, s.Namespace), nil
	}
	return "", nil
}
