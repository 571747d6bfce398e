package argocd

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Labels and annotations on the Argo CD objects we own. An object is ours only when
// the managed-by label is ours AND the owner UID label names the owning CR: deletes
// check both.
const (
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByValue      = "gitops-service"
	LabelTenantNS       = "managed-gitops.redhat.com/tenant-namespace"
	LabelOwnerUID       = "managed-gitops.redhat.com/owner-uid"
	LabelOwnerKind      = "managed-gitops.redhat.com/owner-kind"
	AnnotationOwnerName = "managed-gitops.redhat.com/owner-name"
	// AnnotationRepositories lists (comma-separated) the repositories the
	// Applications an ApplicationSet generates will use, so the tenant's
	// AppProject allows them before the Applications exist.
	AnnotationRepositories = "managed-gitops.redhat.com/repositories"

	OwnerKindGitOpsDeployment = "GitOpsDeployment"
	OwnerKindTenant           = "Namespace"

	// LocalServer is how Argo CD names the cluster it runs in.
	LocalServer = "https://kubernetes.default.svc"
)

// ownerMeta returns the labels and annotations that tie an Argo CD object to its owner.
func ownerMeta(kind, namespace, name, uid string) (map[string]string, map[string]string) {
	return map[string]string{
			LabelManagedBy: ManagedByValue,
			LabelTenantNS:  namespace,
			LabelOwnerKind: kind,
			LabelOwnerUID:  uid,
		}, map[string]string{
			AnnotationOwnerName: namespace + "/" + name,
		}
}

// IsOwnedBy says whether labels mark an object as ours and owned by the CR with this UID.
func IsOwnedBy(labels map[string]string, kind, uid string) bool {
	return labels[LabelManagedBy] == ManagedByValue && labels[LabelOwnerKind] == kind &&
		uid != "" && labels[LabelOwnerUID] == uid
}

// ClusterServer is the server URL of a ManagedEnvironment's Argo CD cluster Secret.
// Argo CD keys clusters by server URL; the query makes two tenants' credentials for
// one cluster two distinct clusters to Argo CD.
func ClusterServer(apiURL, managedEnvironmentUID string) string {
	return apiURL + "?managedEnvironment=" + managedEnvironmentUID
}

// HasMeta says whether current carries every label and annotation of desired.
func HasMeta(current, desired metav1.Object) bool {
	return subset(desired.GetLabels(), current.GetLabels()) && subset(desired.GetAnnotations(), current.GetAnnotations())
}

// CopyMeta sets desired's labels and annotations on current, keeping the others.
func CopyMeta(current, desired metav1.Object) {
	current.SetLabels(merge(current.GetLabels(), desired.GetLabels()))
	current.SetAnnotations(merge(current.GetAnnotations(), desired.GetAnnotations()))
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}
