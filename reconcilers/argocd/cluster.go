package argocd

import (
	"encoding/json"
	"strconv"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const (
	// LabelSecretType and SecretTypeCluster make a Secret an Argo CD cluster.
	LabelSecretType   = "argocd.argoproj.io/secret-type"
	SecretTypeCluster = "cluster"

	// AnnotationServiceAccount names (<namespace>/<name>) the ServiceAccount we
	// created on the target cluster whose token the cluster Secret holds; absent
	// when the token is the user's own.
	AnnotationServiceAccount = "managed-gitops.redhat.com/service-account"

	// LabelTenantCluster marks the cluster Secrets of tenants' ManagedEnvironments,
	// so the platform admins' ApplicationSet cluster generators can leave them out
	// (selector: this key DoesNotExist); Argo CD lists project-scoped clusters to
	// every cluster generator.
	LabelTenantCluster = "managed-gitops.redhat.com/tenant-cluster"

	// ClusterNamePrefix starts the Argo CD name of every tenant's cluster. The
	// ':' and '/' that follow never occur in Kubernetes names, so no cluster an
	// admin names after a namespace, context or host takes one of our names
	// (Argo CD resolves destination.name over all clusters and fails on two of
	// one name). Cluster names starting with it are reserved for the GitOps Service.
	ClusterNamePrefix = "gitops-service:"

	// maxClusterNameLength keeps the display name of a cluster readable.
	maxClusterNameLength = 100
)

// ClusterCredentials are what Argo CD connects to a ManagedEnvironment's cluster with.
type ClusterCredentials struct {
	// BearerToken authenticates to the cluster's API server.
	BearerToken string
	// CAData is the PEM bundle that signs the API server's certificate; unused when Insecure.
	CAData []byte
	// Insecure skips the verification of the API server's certificate.
	Insecure bool
	// ServiceAccount is <namespace>/<name> of the ServiceAccount we created on the
	// cluster when BearerToken is its token; empty for the user's own token.
	ServiceAccount string
}

// ClusterSecretName is the name of a ManagedEnvironment's Argo CD cluster Secret.
func ClusterSecretName(managedEnvironmentUID string) string {
	return "managed-env-" + managedEnvironmentUID
}

// ClusterName is the name Argo CD shows for a ManagedEnvironment's cluster:
// gitops-service:<namespace>/<name>, shortened (and made distinct by the UID)
// when long. It depends only on the environment's namespace, name and UID, so
// it never changes while the environment lives.
func ClusterName(env *v1.GitOpsDeploymentManagedEnvironment) string {
	name := ClusterNamePrefix + env.Namespace + "/" + env.Name
	if len(name) <= maxClusterNameLength {
		return name
	}
	uid := string(env.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return strings.TrimRight(name[:maxClusterNameLength-len(uid)-1], "-./") + "-" + uid
}

// ClusterNamespaces returns the namespaces of a cluster Secret: sorted, without
// duplicates or empty entries.
func ClusterNamespaces(namespaces []string) []string {
	return sortedUnique(namespaces)
}

// ClusterSecret returns the Argo CD cluster Secret of a ManagedEnvironment, in the
// Argo CD namespace and scoped to the tenant's project. Its server is
// ClusterServer(apiURL, UID), so the environment is a cluster of its own to Argo CD
// even when another environment names the same API server.
func ClusterSecret(argoNamespace string, env *v1.GitOpsDeploymentManagedEnvironment, project string, creds ClusterCredentials) *corev1.Secret {
	labels, annotations := ownership.Meta(ownership.KindManagedEnvironment, env.Namespace, env.Name, string(env.UID))
	labels[LabelSecretType] = SecretTypeCluster
	labels[LabelTenantCluster] = "true"
	if creds.ServiceAccount != "" {
		annotations[AnnotationServiceAccount] = creds.ServiceAccount
	}
	tls := argov1alpha1.TLSClientConfig{Insecure: creds.Insecure}
	if !creds.Insecure && len(creds.CAData) > 0 {
		// client-go refuses a CA together with insecure, so only one is set.
		tls.CAData = append([]byte(nil), creds.CAData...)
	}
	config, err := json.Marshal(argov1alpha1.ClusterConfig{BearerToken: creds.BearerToken, TLSClientConfig: tls})
	if err != nil {
		// Strings, bools and bytes always marshal.
		panic(err)
	}
	data := map[string][]byte{
		"name":    []byte(ClusterName(env)),
		"server":  []byte(ClusterServer(env.Spec.APIURL, string(env.UID))),
		"project": []byte(project),
		"config":  config,
	}
	if ns := ClusterNamespaces(env.Spec.Namespaces); len(ns) > 0 {
		data["namespaces"] = []byte(strings.Join(ns, ","))
		// Argo CD reads clusterResources only for a cluster limited to namespaces.
		data["clusterResources"] = []byte(strconv.FormatBool(env.Spec.ClusterResources))
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClusterSecretName(string(env.UID)),
			Namespace:   argoNamespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
