package argocd

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
