// Package ownership is how we mark what we write for a user's CR (in the
// Argo CD namespace, in tenant namespaces, on tenant clusters) and how we
// recognise it again: the labels and annotation, their parsing, and the names
// of the objects we derive from a CR's name.
package ownership

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels and annotations on the objects we own. An object is ours only when
// the managed-by label is ours AND the owner UID label names the owning CR:
// deletes check both.
const (
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByValue      = "gitops-service"
	LabelTenantNS       = "managed-gitops.redhat.com/tenant-namespace"
	LabelOwnerUID       = "managed-gitops.redhat.com/owner-uid"
	LabelOwnerKind      = "managed-gitops.redhat.com/owner-kind"
	AnnotationOwnerName = "managed-gitops.redhat.com/owner-name"
)

// Owner kinds (the owner-kind label).
const (
	KindGitOpsDeployment      = "GitOpsDeployment"
	KindTenant                = "Namespace"
	KindBinding               = "SnapshotEnvironmentBinding"
	KindManagedEnvironment    = "GitOpsDeploymentManagedEnvironment"
	KindRepositoryCredentials = "GitOpsDeploymentRepositoryCredentials"
	KindEnvironment           = "Environment"
)

// Meta returns the labels and annotations that tie an object to its owner.
func Meta(kind, namespace, name, uid string) (map[string]string, map[string]string) {
	return map[string]string{
			LabelManagedBy: ManagedByValue,
			LabelTenantNS:  namespace,
			LabelOwnerKind: kind,
			LabelOwnerUID:  uid,
		}, map[string]string{
			AnnotationOwnerName: namespace + "/" + name,
		}
}

// IsOwnedBy says whether labels mark an object as ours and owned by the CR
// of this kind with this UID.
func IsOwnedBy(labels map[string]string, kind, uid string) bool {
	return labels[LabelManagedBy] == ManagedByValue && labels[LabelOwnerKind] == kind &&
		uid != "" && labels[LabelOwnerUID] == uid
}

// Owner is the CR of this kind an object of ours was made for. The owner-name
// annotation counts only in the namespace the tenant label names, so a label
// copied elsewhere cannot point us at another tenant's object.
func Owner(o metav1.Object, kind string) (types.NamespacedName, bool) {
	l := o.GetLabels()
	if !IsOwnedBy(l, kind, l[LabelOwnerUID]) {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(o.GetAnnotations()[AnnotationOwnerName], "/")
	if !ok || ns == "" || name == "" || ns != l[LabelTenantNS] {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// ManagedEnvironmentName is the GitOpsDeploymentManagedEnvironment made for
// an Environment with a cluster, as in the original service.
func ManagedEnvironmentName(environment string) string { return "managed-environment-" + environment }

// AnyUID, SameUID and OtherUID select our objects by their owner UID: all of
// a CR name's, the live CR's, or those of an earlier CR of the same name.
func AnyUID(types.UID) bool { return true }

func SameUID(uid types.UID) func(types.UID) bool {
	return func(u types.UID) bool { return u == uid }
}

func OtherUID(uid types.UID) func(types.UID) bool {
	return func(u types.UID) bool { return u != uid }
}
