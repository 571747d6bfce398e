package environment

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/managedenvironment"
)

const (
	// OwnerKindEnvironment is the owner-kind label of what we write for an Environment.
	OwnerKindEnvironment = "Environment"

	// AnnotationCredentialsVersion, on a ManagedEnvironment we made, is the
	// resourceVersion of its credentials Secret: when we rewrite the Secret,
	// the annotation changes, and the ManagedEnvironment reconciler (which
	// does not watch tenant Secrets) reconnects at once. It says nothing about
	// the Secret's content.
	AnnotationCredentialsVersion = "managed-gitops.redhat.com/credentials-secret-version"

	// KubeconfigKey is the only key copied from the credentials Secret.
	KubeconfigKey = managedenvironment.KubeconfigKey
)

// ManagedEnvironmentName is the GitOpsDeploymentManagedEnvironment made for an
// Environment, as in the original service.
func ManagedEnvironmentName(environment string) string { return "managed-environment-" + environment }

// SecretName is the copy of an Environment's credentials Secret that its
// ManagedEnvironment references, as in the original service.
func SecretName(environment string) string { return "managed-environment-secret-" + environment }

// Source is where an Environment's cluster and credentials come from: the
// fields of its GitOpsDeploymentManagedEnvironment and the name of the Secret,
// in the Environment's namespace, whose kubeconfig is copied.
type Source struct {
	APIURL                     string
	CredentialsSecret          string
	AllowInsecureSkipTLSVerify bool
	Namespaces                 []string
	ClusterResources           bool
}

// HasCredentials says whether an Environment sets
// unstableConfigurationFields.kubernetesCredentials. One that does not (and
// names no DeploymentTargetClaim) is the tenant's namespace on the local
// cluster.
func HasCredentials(env *as.Environment) bool {
	u := env.Spec.UnstableConfigurationFields
	return u != nil && (u.APIURL != "" || u.ClusterCredentialsSecret != "")
}

// sourceFromCredentials is the Source of an Environment that sets
// kubernetesCredentials, or why it is unusable.
func sourceFromCredentials(env *as.Environment) (*Source, *kernel.Refusal) {
	c := env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials
	if c.APIURL == "" {
		return nil, kernel.Refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment '%s' is invalid: kubernetesCredentials.apiURL is empty", env.Name)
	}
	if r := managedenvironment.ValidateAPIURL(c.APIURL); r != nil {
		return nil, kernel.Refuse(as.EnvironmentReasonUnsupportedAPIURL,
			"Environment '%s' has an unsupported kubernetesCredentials.apiURL: %s", env.Name, r.Message)
	}
	if c.ClusterCredentialsSecret == "" {
		return nil, kernel.Refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment '%s' is invalid: kubernetesCredentials.clusterCredentialsSecret is empty", env.Name)
	}
	return &Source{
		APIURL:                     c.APIURL,
		CredentialsSecret:          c.ClusterCredentialsSecret,
		AllowInsecureSkipTLSVerify: c.AllowInsecureSkipTLSVerify,
		Namespaces:                 slices.Clone(c.Namespaces),
		ClusterResources:           c.ClusterResources,
	}, nil
}

// ownerMeta returns the labels, annotations and controller reference of what
// we write for env.
func ownerMeta(env *as.Environment) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: env.Namespace,
		Labels: map[string]string{
			argocd.LabelManagedBy: argocd.ManagedByValue,
			argocd.LabelTenantNS:  env.Namespace,
			argocd.LabelOwnerKind: OwnerKindEnvironment,
			argocd.LabelOwnerUID:  string(env.UID),
			as.LabelEnvironment:   env.Name,
		},
		Annotations: map[string]string{argocd.AnnotationOwnerName: env.Namespace + "/" + env.Name},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         as.GroupVersion.String(),
			Kind:               OwnerKindEnvironment,
			Name:               env.Name,
			UID:                env.UID,
			Controller:         ptr.To(true),
			BlockOwnerDeletion: ptr.To(true),
		}},
	}
}

// desiredSecret is the copy of the user's kubeconfig that env's
// ManagedEnvironment reads.
func desiredSecret(env *as.Environment, kubeconfig []byte) *corev1.Secret {
	m := ownerMeta(env)
	m.Name = SecretName(env.Name)
	return &corev1.Secret{
		ObjectMeta: m,
		Type:       v1.ManagedEnvironmentSecretType,
		Data:       map[string][]byte{KubeconfigKey: kubeconfig},
	}
}

// desiredManagedEnvironment is env's ManagedEnvironment; credentialsVersion is
// the resourceVersion of its Secret.
func desiredManagedEnvironment(env *as.Environment, src *Source, credentialsVersion string) *v1.GitOpsDeploymentManagedEnvironment {
	m := ownerMeta(env)
	m.Name = ManagedEnvironmentName(env.Name)
	m.Annotations[AnnotationCredentialsVersion] = credentialsVersion
	return &v1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: m,
		Spec: v1.GitOpsDeploymentManagedEnvironmentSpec{
			APIURL:                     src.APIURL,
			ClusterCredentialsSecret:   SecretName(env.Name),
			AllowInsecureSkipTLSVerify: src.AllowInsecureSkipTLSVerify,
			Namespaces:                 src.Namespaces,
			ClusterResources:           src.ClusterResources,
		},
	}
}

// ownedBy says whether obj was written by us for the Environment with this
// UID: our labels AND the controller reference both name it.
func ownedBy(obj metav1.Object, uid string) bool {
	if !argocd.IsOwnedBy(obj.GetLabels(), OwnerKindEnvironment, uid) {
		return false
	}
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == OwnerKindEnvironment && ref.APIVersion == as.GroupVersion.String() && string(ref.UID) == uid
}

// ownedByName says whether obj was written by us for an Environment named
// like this, whatever its UID (an earlier Environment of the same name).
func ownedByName(obj metav1.Object, namespace, name string) bool {
	uid := obj.GetLabels()[argocd.LabelOwnerUID]
	return ownedBy(obj, uid) && obj.GetAnnotations()[argocd.AnnotationOwnerName] == namespace+"/"+name &&
		metav1.GetControllerOf(obj).Name == name
}
