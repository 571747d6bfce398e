package promotionpreview

import (
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
