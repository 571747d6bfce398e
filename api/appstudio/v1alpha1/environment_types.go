/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentStrategyType is the strategy for promotion between Environments.
// +kubebuilder:validation:Enum=AppStudioAutomated;Manual
type DeploymentStrategyType string

const (
	// DeploymentStrategyAppStudioAutomated: a successful promotion to a parent
	// Environment automatically promotes to its child Environments, and an
	// Environment without a parent is automatically promoted to.
	DeploymentStrategyAppStudioAutomated DeploymentStrategyType = "AppStudioAutomated"

	// DeploymentStrategyManual: a user action (a PromotionRun) is required to
	// promote to the Environment.
	DeploymentStrategyManual DeploymentStrategyType = "Manual"
)

// ConfigurationClusterType is the kind of cluster an Environment's
// kubernetesCredentials point to.
// +kubebuilder:validation:Enum=OpenShift;Kubernetes
type ConfigurationClusterType string

const (
	// ConfigurationClusterTypeOpenShift is an OpenShift cluster.
	ConfigurationClusterTypeOpenShift ConfigurationClusterType = "OpenShift"
	// ConfigurationClusterTypeKubernetes is a non-OpenShift Kubernetes cluster.
	ConfigurationClusterTypeKubernetes ConfigurationClusterType = "Kubernetes"
)

// EnvironmentSpec is the desired state of an Environment.
type EnvironmentSpec struct {
	// DisplayName is a user-visible, user-definable name for the Environment.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// DeploymentStrategy is the strategy for promotion to this Environment:
	// AppStudioAutomated (a successful promotion to the parent Environment
	// automatically promotes to this one; an Environment without a parent is
	// automatically promoted to) or Manual (a user action is required).
	// +kubebuilder:default=Manual
	// +optional
	DeploymentStrategy DeploymentStrategyType `json:"deploymentStrategy,omitempty"`

	// ParentEnvironment is the name of the Environment (in the same namespace)
	// that is promoted from before this one: Environments form a digraph that
	// gives the promotion flow, e.g. dev -> staging -> production.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	ParentEnvironment string `json:"parentEnvironment,omitempty"`

	// Tags are a user-visible, user-definable set of tags that can be applied
	// to the Environment.
	// +optional
	Tags []string `json:"tags,omitempty"`

	// Configuration contains Environment-specific configuration, such as the
	// environment variables to use when running container workloads in this
	// Environment, and the DeploymentTargetClaim to deploy to.
	// +optional
	Configuration EnvironmentConfiguration `json:"configuration,omitempty"`

	// UnstableConfigurationFields holds the credentials of a remote cluster to
	// deploy to. It is marked 'unstable': it is expected to change
	// significantly. It must not be set together with
	// .spec.configuration.target.deploymentTargetClaim.claimName.
	// +optional
	UnstableConfigurationFields *UnstableEnvironmentConfiguration `json:"unstableConfigurationFields,omitempty"`

	// Gates are the conditions a promotion must meet to enter this
	// Environment (freeze windows and switch, approvals) or to leave it for
	// its children (soak time).
	// +optional
	Gates *PromotionGates `json:"gates,omitempty"`
	// Rollback says when this Environment asks for a rollback by itself.
	// +optional
	Rollback *RollbackPolicy `json:"rollback,omitempty"`
	// Preview, when set, makes a PromotionRun into this Environment wait for
	// a clean PromotionPreview of its Snapshot (see PreviewPolicy).
	// +optional
	Preview *PreviewPolicy `json:"preview,omitempty"`
	// Analysis are checks (Prometheus queries, HTTP requests) a promotion's
	// step into this Environment must pass, once deployed, to be verified
	// (see AnalysisPolicy).
	// +optional
	Analysis *AnalysisPolicy `json:"analysis,omitempty"`
}

// EnvironmentConfiguration contains Environment-specific configuration.
type EnvironmentConfiguration struct {
	// Env is the list of environment variables to set in the container
	// workloads deployed to this Environment.
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []EnvVarPair `json:"env,omitempty"`

	// Target references the DeploymentTargetClaim whose bound DeploymentTarget
	// (and its cluster credentials Secret) this Environment deploys to.
	// +optional
	Target EnvironmentTarget `json:"target,omitempty"`
}

// EnvironmentTarget references the deployment target of an Environment.
type EnvironmentTarget struct {
	// DeploymentTargetClaim references a DeploymentTargetClaim in the
	// namespace of the Environment. The Environment controller waits for the
	// claim to be Bound, then deploys with the credentials of the bound
	// DeploymentTarget.
	// +optional
	DeploymentTargetClaim DeploymentTargetClaimConfig `json:"deploymentTargetClaim,omitempty"`
}

// DeploymentTargetClaimConfig names a DeploymentTargetClaim.
type DeploymentTargetClaimConfig struct {
	// ClaimName is the name of a DeploymentTargetClaim in the namespace of the
	// Environment.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	ClaimName string `json:"claimName,omitempty"`
}

// EnvVarPair is an environment variable, as a name/value pair. Both go into
// generated Argo CD objects: the name is printable ASCII without '=' (as
// Kubernetes wants it), the value has no control characters (NEL among
// them) nor Unicode line or paragraph separators.
type EnvVarPair struct {
	// Name is the name of the environment variable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[ -<>-~]+$`
	// +required
	Name string `json:"name"`

	// Value is the value of the environment variable.
	// +kubebuilder:validation:MaxLength=16384
	// +kubebuilder:validation:Pattern=`^[^\p{Cc}\x{2028}\x{2029}]*$`
	// +required
	Value string `json:"value"`
}

// UnstableEnvironmentConfiguration holds the fields of an Environment that
// are expected to change significantly.
type UnstableEnvironmentConfiguration struct {
	// ClusterType is the kind of cluster the credentials point to: OpenShift
	// or Kubernetes.
	// +optional
	ClusterType ConfigurationClusterType `json:"clusterType,omitempty"`

	// Embedded, as in the original API, so that Go code can read its fields
	// directly from UnstableEnvironmentConfiguration; the json name makes it
	// the nested "kubernetesCredentials" object, not inlined fields.

	// KubernetesClusterCredentials are the credentials of the remote cluster.
	// +optional
	KubernetesClusterCredentials `json:"kubernetesCredentials,omitempty"`
}

// KubernetesClusterCredentials contains the credentials of a remote cluster.
// The fields correspond to GitOpsDeploymentManagedEnvironment fields.
type KubernetesClusterCredentials struct {
	// TargetNamespace is the default destination namespace of the deployments
	// to this Environment.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// APIURL is the URL of the cluster's Kubernetes API endpoint.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^(?i:https)://[^/?#:@]')`,message="the API URL must be an https:// URL with a host",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[^:]*://[^/?#]*@') && !self.matches(r'[?&#\[\]*{}!\\\s]')`,message="the API URL must not contain credentials, a query, a fragment, spaces or any of [ ] * { } ! \\",reason=FieldValueForbidden
	APIURL string `json:"apiURL"`

	// IngressDomain is the ingress domain of the cluster. Not used by the
	// GitOps Service; accepted for compatibility with existing manifests.
	// +optional
	IngressDomain string `json:"ingressDomain,omitempty"`

	// ClusterCredentialsSecret is the name of a Secret, in the namespace of the
	// Environment, that contains a kubeconfig for the cluster in its
	// 'kubeconfig' key.
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	ClusterCredentialsSecret string `json:"clusterCredentialsSecret"`

	// AllowInsecureSkipTLSVerify, if true, lets Argo CD connect to the cluster
	// even if it uses an invalid or self-signed TLS certificate.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`

	// Namespaces, if not empty, restricts the deployments to these namespaces
	// of the cluster: use it when the credentials do not give cluster-wide
	// access. Same as the field of the same name of
	// GitOpsDeploymentManagedEnvironment.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// ClusterResources, when Namespaces is not empty, lets Argo CD also manage
	// cluster-scoped resources. Ignored when Namespaces is empty.
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty"`
}

// EnvironmentStatus is the observed state of an Environment.
type EnvironmentStatus struct {
	// Conditions describe the state of the Environment. A condition of type
	// ErrorOccurred reports why the Environment could not be configured
	// (reasons DeploymentTargetClaimNotFound, DeploymentTargetNotFound,
	// InvalidEnvironment, SecretNotFound, ErrorOccurred).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the sidecar last acted on
	// (kstatus: a Ready condition is current only when this equals
	// metadata.generation).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=env,categories=gitops
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.deploymentStrategy`
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentEnvironment`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.spec.configuration.target.deploymentTargetClaim.claimName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="the name of an Environment must be a DNS-1123 label"

// Environment describes a target location for deployments of Kubernetes
// resources whose source is a GitOps repository: a namespace of the local
// cluster, a DeploymentTarget bound to a DeploymentTargetClaim, or a remote
// cluster given by its credentials. The GitOps Service turns an Environment
// into a GitOpsDeploymentManagedEnvironment.
type Environment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Environment.
	// +optional
	Spec EnvironmentSpec `json:"spec,omitempty"`

	// Status is the observed state of the Environment.
	// +optional
	Status EnvironmentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EnvironmentList is a list of Environments.
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Environments.
	Items []Environment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Environment{}, &EnvironmentList{})
}

// HasCredentials says whether the Environment sets
// unstableConfigurationFields.kubernetesCredentials. One that does not (and
// names no DeploymentTargetClaim) is the tenant's namespace on the local
// cluster.
func (e *Environment) HasCredentials() bool {
	u := e.Spec.UnstableConfigurationFields
	return u != nil && (u.APIURL != "" || u.ClusterCredentialsSecret != "")
}
