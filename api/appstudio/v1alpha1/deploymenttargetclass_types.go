/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provisioner is the name of a DeploymentTarget provisioner.
// +kubebuilder:validation:MinLength=1
type Provisioner string

// ProvisionerDevSandbox provisions a namespace on a sandbox cluster through a
// SpaceRequest.
const ProvisionerDevSandbox Provisioner = "appstudio.redhat.com/devsandbox"

// ProvisionerNamespace provisions a namespace (with a ServiceAccount limited to
// it) on the local cluster or on a cluster the platform admin configured.
const ProvisionerNamespace Provisioner = "managed-gitops.redhat.com/namespace"

// ReclaimPolicy tells the provisioner what to do with a dynamically
// provisioned DeploymentTarget when its DeploymentTargetClaim is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type ReclaimPolicy string

const (
	// ReclaimPolicyDelete: delete the DeploymentTarget and its external
	// resources.
	ReclaimPolicyDelete ReclaimPolicy = "Delete"
	// ReclaimPolicyRetain: keep the DeploymentTarget, only release it (phase
	// Released), so that it can be bound to another claim later.
	ReclaimPolicyRetain ReclaimPolicy = "Retain"
)

// DeploymentTargetClassSpec is the desired state of a DeploymentTargetClass.
type DeploymentTargetClassSpec struct {
	// Provisioner is the name of the provisioner that handles the class, e.g.
	// appstudio.redhat.com/devsandbox.
	// +required
	Provisioner Provisioner `json:"provisioner"`

	// Parameters are passed to the provisioner. Free-form; no parameters are
	// currently defined.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`

	// ReclaimPolicy tells the provisioner what to do with a DeploymentTarget
	// once its claim is deleted: Delete (delete the DeploymentTarget and its
	// external resources) or Retain (only release the DeploymentTarget so that
	// it can be bound to another claim).
	// +required
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy"`

	// AllowTargetResourceExpansion tells whether the provisioner may resize
	// the external resources of a DeploymentTarget when the resources
	// requested by its claim change.
	// +kubebuilder:default=false
	// +optional
	AllowTargetResourceExpansion bool `json:"allowTargetResourceExpansion,omitempty"`
}

// DeploymentTargetClassStatus is the observed state of a
// DeploymentTargetClass.
type DeploymentTargetClassStatus struct {
	// Conditions describe the state of the DeploymentTargetClass.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dtcls,categories=gitops
// +kubebuilder:printcolumn:name="Provisioner",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="Reclaim Policy",type=string,JSONPath=`.spec.reclaimPolicy`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DeploymentTargetClass is a kind of DeploymentTarget that can be
// provisioned dynamically (like a StorageClass), e.g. a namespace on a
// sandbox cluster. DeploymentTargets and DeploymentTargetClaims refer to it by
// name. Cluster-scoped; its spec is immutable.
type DeploymentTargetClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the DeploymentTargetClass. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	// +required
	Spec DeploymentTargetClassSpec `json:"spec"`

	// Status is the observed state of the DeploymentTargetClass.
	// +optional
	Status DeploymentTargetClassStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DeploymentTargetClassList is a list of DeploymentTargetClasses.
type DeploymentTargetClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the DeploymentTargetClasses.
	Items []DeploymentTargetClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTargetClass{}, &DeploymentTargetClassList{})
}
