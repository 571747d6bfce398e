package argocd

import (
	"sort"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

// Tenant is what the AppProject of one tenant namespace is made from.
type Tenant struct {
	Namespace string
	UID       string
	// Repos are the repository URLs the tenant's CRs use.
	Repos []string
	// Destinations are the remote destinations of the tenant's ManagedEnvironments.
	Destinations []Destination
	// Subjects are the Argo CD users and groups mapped to the tenant (ParseSubjects).
	Subjects []string
}

// Destination is a server URL and a namespace ("*" for all) of a remote cluster.
type Destination struct {
	Server    string
	Namespace string
}

// ProjectName is the AppProject of a tenant namespace. It is keyed by the namespace
// UID so that a namespace deleted and recreated with the same name is a new tenant.
func ProjectName(namespaceUID string) string {
	return "gitops-tenant-" + namespaceUID
}

// AppProject returns the tenant's AppProject: its only local destination is its own
// namespace, remote destinations are its own ManagedEnvironments, no cluster-scoped
// resources, only the repositories it uses, and the tenant role for its subjects.
func AppProject(argoNamespace string, t Tenant) *argov1alpha1.AppProject {
	labels, annotations := ownership.Meta(ownership.KindTenant, t.Namespace, t.Namespace, t.UID)
	dests := []argov1alpha1.ApplicationDestination{{Server: LocalServer, Namespace: t.Namespace}}
	remote := append([]Destination(nil), t.Destinations...)
	sort.Slice(remote, func(i, j int) bool {
		if remote[i].Server != remote[j].Server {
			return remote[i].Server < remote[j].Server
		}
		return remote[i].Namespace < remote[j].Namespace
	})
	for _, d := range remote {
		dests = append(dests, argov1alpha1.ApplicationDestination{Server: d.Server, Namespace: d.Namespace})
	}
	repos := sortedUnique(t.Repos)
	// No ClusterResourceWhitelist: Argo CD checks cluster-scoped resources against the
	// project's whitelist only, not its destinations, so allowing any would let a tenant
	// create them on the local cluster with Argo CD's own credentials.
	return &argov1alpha1.AppProject{
		TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ProjectName(t.UID),
			Namespace:   argoNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: argov1alpha1.AppProjectSpec{
			Description:  "GitOps Service tenant " + t.Namespace,
			SourceRepos:  repos,
			Destinations: dests,
			Roles:        tenantRoles(ProjectName(t.UID), t.Subjects),
		},
	}
}

func sortedUnique(in []string) []string {
	set := map[string]struct{}{}
	for _, s := range in {
		if s != "" {
			set[s] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
