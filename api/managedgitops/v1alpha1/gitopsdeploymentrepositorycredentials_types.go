package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GitOpsDeploymentRepositoryCredentialsSpec points at a Secret with the
// credentials of a private Git repository.
type GitOpsDeploymentRepositoryCredentialsSpec struct {
	// Repository is the URL of the private repository (https:// or ssh://).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^[\t-\r \x{85}\p{Z}]*(?i:https|ssh)://')`,message="url must start with https:// or ssh://",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[^:]*://[^/?#@]*:[^/?#@]*@')`,message="url must not contain a password: put the credentials in the Secret",reason=FieldValueForbidden
	Repository string `json:"url"`
	// Secret is the name of a Secret in the same namespace with keys url and
	// username/password, or sshPrivateKey.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	Secret string `json:"secret"`
}

// GitOpsDeploymentRepositoryCredentialsStatus is the observed state.
type GitOpsDeploymentRepositoryCredentialsStatus struct {
	// Conditions: ErrorOccurred, ValidRepositoryUrl, ValidRepositoryCredential.
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
// +kubebuilder:resource:shortName=repocred;gitopsdeplrepocred,categories=gitops
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secret`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitOpsDeploymentRepositoryCredentials gives Argo CD the credentials of a private
// repository, for this namespace's deployments only.
type GitOpsDeploymentRepositoryCredentials struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsDeploymentRepositoryCredentialsSpec   `json:"spec,omitempty"`
	Status GitOpsDeploymentRepositoryCredentialsStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GitOpsDeploymentRepositoryCredentialsList is a list of GitOpsDeploymentRepositoryCredentials.
type GitOpsDeploymentRepositoryCredentialsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeploymentRepositoryCredentials `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentRepositoryCredentials{}, &GitOpsDeploymentRepositoryCredentialsList{})
}
