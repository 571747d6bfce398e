package environment

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
	"github.com/gitops-service/gitops-service/reconcilers/kubeconfig"
	"github.com/gitops-service/gitops-service/reconcilers/ownership"
)

const (
	// AnnotationCredentialsVersion, on a ManagedEnvironment we made, is the
	// resourceVersion of its credentials Secret: when we rewrite the Secret,
	// the annotation changes and the ManagedEnvironment reconciler reconnects.
	// It now also watches the tenants' Secrets of its type (our copy is one),
	// so this is a second trigger, kept because tests and users read it. It
	// says nothing about the Secret's content.
	AnnotationCredentialsVersion = "managed-gitops.redhat.com/credentials-secret-version"

	// KubeconfigKey is the only key copied from the credentials Secret.
	KubeconfigKey = kubeconfig.KubeconfigKey
)

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
	// AnySecretType: a provisioner's Secret (through a DeploymentTarget)
	// may be untyped.
	AnySecretType bool
}

// credentialsSource says where env's cluster and credentials come from: nil
// (and no error) for the tenant's own namespace on the local cluster. claim
// is the DeploymentTargetClaim env names (nil when not found), dt the target
// that claim is bound to (nil when not found). The error is a
// *kernel.Refusal (Keep: what was deployed through the claim stays) or a
// *kernel.Waiting.
func credentialsSource(env *as.Environment, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) (*Source, error) {
	name := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	switch {
	case name != "" && env.HasCredentials():
		return nil, kernel.Refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set")
	case name != "":
		return sourceFromClaim(env, name, claim, dt)
	case env.HasCredentials():
		return sourceFromCredentials(env)
	}
	return nil, nil
}

// sourceFromCredentials is the Source of an Environment that sets
// kubernetesCredentials, or why it is unusable.
func sourceFromCredentials(env *as.Environment) (*Source, error) {
	c := env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials
	if c.APIURL == "" {
		return nil, kernel.Refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment '%s' is invalid: kubernetesCredentials.apiURL is empty", env.Name)
	}
	if r := kubeconfig.ValidateAPIURL(c.APIURL); r != nil {
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

// sourceFromClaim is the Source of an Environment that deploys through the
// DeploymentTargetClaim name: the Bound claim's DeploymentTarget, all in the
// Environment's namespace, limited to the target's defaultNamespace.
func sourceFromClaim(env *as.Environment, name string, claim *as.DeploymentTargetClaim, dt *as.DeploymentTarget) (*Source, error) {
	if claim == nil {
		return nil, kernel.Refuse(as.EnvironmentReasonDeploymentTargetClaimNotFound,
			"DeploymentTargetClaim %s referenced by Environment '%s' was not found in namespace %s", name, env.Name, env.Namespace)
	}
	switch claim.Status.Phase {
	case as.DeploymentTargetClaimPhaseBound:
	case as.DeploymentTargetClaimPhaseLost:
		return nil, kernel.Refuse(as.EnvironmentReasonDeploymentTargetClaimLost,
			"DeploymentTargetClaim %s lost its DeploymentTarget %s; what was deployed is left as it is", name, claim.Spec.TargetName).Keeping()
	default:
		// The claim and target are watched; what was deployed stays meanwhile.
		return nil, kernel.Wait(as.EnvironmentReasonDeploymentTargetClaimNotBound, kernel.WaitingRetry,
			"DeploymentTargetClaim %s to be Bound (phase %q)", name, claim.Status.Phase)
	}
	if dt == nil || dt.Spec.ClaimRef != claim.Name {
		return nil, kernel.Refuse(as.EnvironmentReasonDeploymentTargetNotFound,
			"DeploymentTarget %s bound to DeploymentTargetClaim %s was not found in namespace %s", claim.Spec.TargetName, name, env.Namespace).Keeping()
	}
	c := dt.Spec.KubernetesClusterCredentials
	if rf := kubeconfig.ValidateAPIURL(c.APIURL); rf != nil {
		return nil, kernel.Refuse(as.EnvironmentReasonUnsupportedAPIURL,
			"DeploymentTarget %s has an unsupported apiURL: %s", dt.Name, rf.Message)
	}
	return &Source{
		APIURL:                     c.APIURL,
		CredentialsSecret:          c.ClusterCredentialsSecret,
		AllowInsecureSkipTLSVerify: c.AllowInsecureSkipTLSVerify,
		Namespaces:                 []string{c.DefaultNamespace},
		AnySecretType:              true,
	}, nil
}

// keeps says whether err leaves what was written for the Environment in
// place: waiting for, or lost, a claim's target.
func keeps(err error) bool {
	r := kernel.AsRefusal(err)
	return kernel.AsWaiting(err) != nil || (r != nil && r.Keep)
}

// ownerMeta returns the labels, annotations and controller reference of what
// we write for env.
func ownerMeta(env *as.Environment) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: env.Namespace,
		Labels: map[string]string{
			ownership.LabelManagedBy: ownership.ManagedByValue,
			ownership.LabelTenantNS:  env.Namespace,
			ownership.LabelOwnerKind: ownership.KindEnvironment,
			ownership.LabelOwnerUID:  string(env.UID),
			as.LabelEnvironment:      env.Name,
		},
		Annotations: map[string]string{ownership.AnnotationOwnerName: env.Namespace + "/" + env.Name},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         as.GroupVersion.String(),
			Kind:               ownership.KindEnvironment,
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
	m.Name = ownership.ManagedEnvironmentName(env.Name)
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
	if !ownership.IsOwnedBy(obj.GetLabels(), ownership.KindEnvironment, uid) {
		return false
	}
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == ownership.KindEnvironment && ref.APIVersion == as.GroupVersion.String() && string(ref.UID) == uid
}

// ownedByName says whether obj was written by us for an Environment named
// like this, whatever its UID (an earlier Environment of the same name).
func ownedByName(obj metav1.Object, namespace, name string) bool {
	uid := obj.GetLabels()[ownership.LabelOwnerUID]
	return ownedBy(obj, uid) && obj.GetAnnotations()[ownership.AnnotationOwnerName] == namespace+"/"+name &&
		metav1.GetControllerOf(obj).Name == name
}
