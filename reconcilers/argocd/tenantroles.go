package argocd

import (
	"fmt"
	"sort"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// The platform's tenant mapping: the platform admin annotates a tenant
// namespace with the Argo CD subjects (local account names or SSO groups,
// comma-separated) that belong to the tenant. Tenants cannot write their own
// Namespace object (namespaced admin/edit roles do not cover namespaces), so
// a tenant cannot grant itself or others access.
const AnnotationArgoCDSubjects = "managed-gitops.redhat.com/argocd-subjects"

// AnnotationArgoCDReleaseManagers names, with the syntax of
// AnnotationArgoCDSubjects, the tenant's Argo CD users who keep its gates in
// the UI panel (unfreeze, release a rollback's hold): the panel writes as the
// GitOps Service's ServiceAccount, which the gate policies exempt, so the
// duty the kubectl roles separate must be separated here too. A user also
// needs the tenant mapping to use the panel at all.
const AnnotationArgoCDReleaseManagers = "managed-gitops.redhat.com/argocd-release-managers"

// TenantRole is the role on each tenant's AppProject that the mapped subjects get.
const TenantRole = "tenant"

// RBACConfigMap and RBACPolicyKey: the global part of the tenants' Argo CD
// rights lives in our own policy.<name>.csv key of argocd-rbac-cm, which Argo
// CD appends to policy.csv. Proxy extensions are not project-scoped in Argo CD,
// so `extensions, invoke` cannot be granted by a project role.
const (
	RBACConfigMap   = "argocd-rbac-cm"
	RBACPolicyKey   = "policy.gitops-service.csv"
	TenantRBACRole  = "role:gitops-service-tenant"
	UIExtensionName = "gitops-service"
)

// ParseSubjects splits the mapping annotation into valid subjects (sorted,
// unique) and the entries it refuses: empty ones are skipped; entries with
// characters that would change Argo CD's CSV policy (',', quotes, '#', line
// breaks) and Argo CD's own role/project subjects ("role:", "proj:") are invalid.
func ParseSubjects(annotation string) (valid, invalid []string) {
	seen := map[string]bool{}
	for _, s := range strings.Split(annotation, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "" || seen[s]:
			continue
		case strings.ContainsAny(s, "\"'#\r\n\t") || strings.HasPrefix(s, "role:") || strings.HasPrefix(s, "proj:"):
			invalid = append(invalid, s)
		default:
			valid = append(valid, s)
		}
		seen[s] = true
	}
	sort.Strings(valid)
	return valid, invalid
}

// tenantRoles is the tenant role of project: its own Applications (get,
// which includes refresh, history and the resource tree; sync; resource
// actions) and their logs, nothing else. Argo CD 3.x checks logs on their own
// (`logs, get`); 2.14 checks `applications, get` for logs unless told
// otherwise, so the one policy set works on both. No update/delete/override:
// the CRs are the source of truth, an edit in Argo CD would be reverted.
func tenantRoles(project string, subjects []string) []argov1alpha1.ProjectRole {
	if len(subjects) == 0 {
		return nil
	}
	sub := fmt.Sprintf("proj:%s:%s", project, TenantRole)
	obj := project + "/*"
	return []argov1alpha1.ProjectRole{{
		Name:        TenantRole,
		Description: "The tenant's Argo CD users and groups (namespace annotation " + AnnotationArgoCDSubjects + ")",
		Policies: []string{
			fmt.Sprintf("p, %s, applications, get, %s, allow", sub, obj),
			fmt.Sprintf("p, %s, applications, sync, %s, allow", sub, obj),
			fmt.Sprintf("p, %s, applications, action/*, %s, allow", sub, obj),
			fmt.Sprintf("p, %s, logs, get, %s, allow", sub, obj),
		},
		Groups: append([]string(nil), subjects...),
	}}
}

// TenantRBACPolicy is the value of RBACPolicyKey for all mapped subjects: they
// may invoke the UI panel's proxy extension (argocd-server also checks
// `applications, get` on the Application, which only the project role gives).
// Empty when nobody is mapped.
func TenantRBACPolicy(subjects []string) string {
	subjects, _ = ParseSubjects(strings.Join(subjects, ","))
	if len(subjects) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "p, %s, extensions, invoke, %s, allow\n", TenantRBACRole, UIExtensionName)
	for _, s := range subjects {
		fmt.Fprintf(&b, "g, %s, %s\n", s, TenantRBACRole)
	}
	return b.String()
}
