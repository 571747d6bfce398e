package environment

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// Refusal is why an Environment cannot be turned into a ManagedEnvironment: a
// reason of the ErrorOccurred condition and a message for the user. Messages
// name objects, never credentials.
type Refusal struct {
	kernel.Refusal
	// waiting: not an error, the Environment waits for another object
	// (condition False, no Warning Event).
	waiting bool
	// keep: what was written for the Environment stays (nothing deployed
	// through it is deleted).
	keep bool
}

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Refusal: *kernel.Refuse(reason, format, args...)}
}

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

// sourceFromCredentials is the Source of an Environment that sets
// kubernetesCredentials, or why it is unusable.
func sourceFromCredentials(env *as.Environment) (*Source, *Refusal) {
	c := env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials
	if c.APIURL == "" {
		return nil, refuse(as.EnvironmentReasonInvalidEnvironment,
			"Environment '%s' is invalid: kubernetesCredentials.apiURL is empty", env.Name)
	}
	if r := kubeconfig.ValidateAPIURL(c.APIURL); r != nil {
		return nil, refuse(as.EnvironmentReasonUnsupportedAPIURL,
			"Environment '%s' has an unsupported kubernetesCredentials.apiURL: %s", env.Name, r.Message)
	}
	if c.ClusterCredentialsSecret == "" {
		return nil, refuse(as.EnvironmentReasonInvalidEnvironment,
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

// sourceFromClaim is the Source of an Environment that deploys through a
// DeploymentTargetClaim: the Bound claim's DeploymentTarget, all in the
// Environment's namespace, limited to the target's defaultNamespace.
func (r *Reconciler) sourceFromClaim(ctx context.Context, env *as.Environment, name string) (*Source, *Refusal, error) {
	claim := &as.DeploymentTargetClaim{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, refuse(as.EnvironmentReasonDeploymentTargetClaimNotFound,
				"DeploymentTargetClaim %s referenced by Environment '%s' was not found in namespace %s", name, env.Name, env.Namespace), nil
		}
		return nil, nil, err
	}
	switch claim.Status.Phase {
	case as.DeploymentTargetClaimPhaseBound:
	case as.DeploymentTargetClaimPhaseLost:
		r := refuse(as.EnvironmentReasonDeploymentTargetClaimLost,
			"DeploymentTargetClaim %s lost its DeploymentTarget %s; what was deployed is left as it is", name, claim.Spec.TargetName)
		r.keep = true
		return nil, r, nil
	default:
		r := refuse(as.EnvironmentReasonDeploymentTargetClaimNotBound,
			"waiting for DeploymentTargetClaim %s to be Bound (phase %q)", name, claim.Status.Phase)
		r.waiting, r.keep = true, true
		return nil, r, nil
	}
	dt := &as.DeploymentTarget{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: env.Namespace, Name: claim.Spec.TargetName}, dt)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	if err != nil || dt.Spec.ClaimRef != claim.Name {
		r := refuse(as.EnvironmentReasonDeploymentTargetNotFound,
			"DeploymentTarget %s bound to DeploymentTargetClaim %s was not found in namespace %s", claim.Spec.TargetName, name, env.Namespace)
		r.keep = true
		return nil, r, nil
	}
	c := dt.Spec.KubernetesClusterCredentials
	if rf := kubeconfig.ValidateAPIURL(c.APIURL); rf != nil {
		return nil, refuse(as.EnvironmentReasonUnsupportedAPIURL,
			"DeploymentTarget %s has an unsupported apiURL: %s", dt.Name, rf.Message), nil
	}
	return &Source{
		APIURL:                     c.APIURL,
		CredentialsSecret:          c.ClusterCredentialsSecret,
		AllowInsecureSkipTLSVerify: c.AllowInsecureSkipTLSVerify,
		Namespaces:                 []string{c.DefaultNamespace},
		AnySecretType:              true,
	}, nil, nil
}
