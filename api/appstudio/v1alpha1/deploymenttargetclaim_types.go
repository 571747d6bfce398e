/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentTargetClaimPhase is the lifecycle phase of a
// DeploymentTargetClaim.
// +kubebuilder:validation:Enum=Pending;Bound;Lost
type DeploymentTargetClaimPhase string

const (
	// DeploymentTargetClaimPhasePending: the claim waits for the binding
	// controller or a user to bind it to a DeploymentTarget that satisfies it.
	DeploymentTargetClaimPhasePending DeploymentTargetClaimPhase = "Pending"
	// DeploymentTargetClaimPhaseBound: the claim is bound to a
	// DeploymentTarget that satisfies it.
	DeploymentTargetClaimPhaseBound DeploymentTargetClaimPhase = "Bound"
	// DeploymentTargetClaimPhaseLost: the claim lost its DeploymentTarget,
	// which was deleted.
	DeploymentTargetClaimPhaseLost DeploymentTargetClaimPhase = "Lost"
)

// DeploymentTargetClaimSpec is the desired state of a DeploymentTargetClaim.
type DeploymentTargetClaimSpec struct {
	// DeploymentTargetClassName is the name of the cluster-scoped
	// DeploymentTargetClass of the DeploymentTarget to bind to (or to
	// provision dynamically).
	// +required
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName"`

	// TargetName is the name of the DeploymentTarget, in the namespace of the
	// claim, that the claim is (or should be) bound to. Set by a user to bind
	// to a given DeploymentTarget, or by the binding controller.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +optional
	TargetName string `json:"targetName,omitempty"`
}

// DeploymentTargetClaimStatus is the observed state of a
// DeploymentTargetClaim.
type DeploymentTargetClaimStatus struct {
	// Phase is the lifecycle phase of the claim: Pending, Bound or Lost.
	// +optional
	Phase DeploymentTargetClaimPhase `json:"phase,omitempty"`

	// Conditions describe the state of the claim.
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
// +kubebuilder:resource:shortName=dtc,categories=gitops
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.deploymentTargetClassName`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DeploymentTargetClaim is a request for a DeploymentTarget (like a
// PersistentVolumeClaim is a request for a PersistentVolume). It is bound to
// an existing DeploymentTarget, or one is provisioned for it by the
// provisioner of its DeploymentTargetClass. An Environment deploys to the
// DeploymentTarget bound to the claim it references.
type DeploymentTargetClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the DeploymentTargetClaim.
	// +required
	Spec DeploymentTargetClaimSpec `json:"spec"`

	// Status is the observed state of the DeploymentTargetClaim.
	// +optional
	Status DeploymentTargetClaimStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DeploymentTargetClaimList is a list of DeploymentTargetClaims.
type DeploymentTargetClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the DeploymentTargetClaims.
	Items []DeploymentTargetClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTargetClaim{}, &DeploymentTargetClaimList{})
}
