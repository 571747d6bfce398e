package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ManagedEnvironmentSecretType is the type a ManagedEnvironment's credentials Secret must have.
const ManagedEnvironmentSecretType = "managed-gitops.redhat.com/managed-environment"

// GitOpsDeploymentManagedEnvironmentSpec describes a cluster to deploy to.
type GitOpsDeploymentManagedEnvironmentSpec struct {
	// APIURL is the https URL of the cluster's API server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^(?i:https)://[^/?#:@]')`,message="the API URL must be an https:// URL with a host",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[^:]*://[^/?#]*@') && !self.matches(r'[?&#\[\]*{}!\\\s]')`,message="the API URL must not contain credentials, a query, a fragment, spaces or any of [ ] * { } ! \\",reason=FieldValueForbidden
	APIURL string `json:"apiURL"`
	// ClusterCredentialsSecret is a Secret (same namespace, type
	// managed-gitops.redhat.com/managed-environment) whose kubeconfig key holds a
	// kubeconfig with a cluster whose server is apiURL.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	ClusterCredentialsSecret string `json:"credentialsSecret"`
	// AllowInsecureSkipTLSVerify lets Argo CD connect despite an invalid or self-signed certificate.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`
	// CreateNewServiceAccount: create a ServiceAccount with its roles on the cluster,
	// using the given credentials, and let Argo CD deploy with it.
	// +optional
	CreateNewServiceAccount bool `json:"createNewServiceAccount,omitempty"`
	// Namespaces limits Argo CD to these namespaces of the cluster.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// ClusterResources lets Argo CD manage cluster-scoped resources when namespaces is set.
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty"`
}

// GitOpsDeploymentManagedEnvironmentStatus is the observed state.
type GitOpsDeploymentManagedEnvironmentStatus struct {
	// Conditions: ConnectionInitializationSucceeded.
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
// +kubebuilder:resource:shortName=managedenv;gitopsdeplmanagedenv,categories=gitops
// +kubebuilder:printcolumn:name="API URL",type=string,JSONPath=`.spec.apiURL`
// +kubebuilder:printcolumn:name="Connected",type=string,JSONPath=`.status.conditions[?(@.type=="ConnectionInitializationSucceeded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitOpsDeploymentManagedEnvironment is a remote cluster that GitOpsDeployments of
// this namespace can deploy to.
type GitOpsDeploymentManagedEnvironment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsDeploymentManagedEnvironmentSpec   `json:"spec,omitempty"`
	Status GitOpsDeploymentManagedEnvironmentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GitOpsDeploymentManagedEnvironmentList is a list of GitOpsDeploymentManagedEnvironments.
type GitOpsDeploymentManagedEnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeploymentManagedEnvironment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentManagedEnvironment{}, &GitOpsDeploymentManagedEnvironmentList{})
}
