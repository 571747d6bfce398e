package argocd

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationRepositories lists (comma-separated) the repositories the
// Applications an ApplicationSet generates will use, so the tenant's
// AppProject allows them before the Applications exist.
const AnnotationRepositories = "managed-gitops.redhat.com/repositories"

// LocalServer is how Argo CD names the cluster it runs in.
const LocalServer = "https://kubernetes.default.svc"

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
