/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentTargetPhase is the lifecycle phase of a DeploymentTarget.
// +kubebuilder:validation:Enum=Pending;Available;Bound;Released;Failed
type DeploymentTargetPhase string

const (
	// DeploymentTargetPhasePending: the DeploymentTarget is not yet available
	// for binding.
	DeploymentTargetPhasePending DeploymentTargetPhase = "Pending"
	// DeploymentTargetPhaseAvailable: the DeploymentTarget waits for a claim
	// to be bound to.
	DeploymentTargetPhaseAvailable DeploymentTargetPhase = "Available"
	// DeploymentTargetPhaseBound: the DeploymentTarget is bound to a
	// DeploymentTargetClaim.
	DeploymentTargetPhaseBound DeploymentTargetPhase = "Bound"
	// DeploymentTargetPhaseReleased: the DeploymentTarget was bound to a
	// claim that was deleted, and its external resources were not freed (the
	// class's reclaimPolicy is Retain).
	DeploymentTargetPhaseReleased DeploymentTargetPhase = "Released"
	// DeploymentTargetPhaseFailed: the DeploymentTarget was released from its
	// claim, but freeing its external resources failed.
	DeploymentTargetPhaseFailed DeploymentTargetPhase = "Failed"
)

// DeploymentTargetClassName is the name of a DeploymentTargetClass.
// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
type DeploymentTargetClassName string

// DeploymentTargetSpec is the desired state of a DeploymentTarget.
type DeploymentTargetSpec struct {
	// DeploymentTargetClassName is the name of the cluster-scoped
	// DeploymentTargetClass that provisioned this DeploymentTarget, or that a
	// claim must name to be bound to it.
	// +required
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName"`

	// KubernetesClusterCredentials are the credentials a consumer of this API
	// can use to connect to a ServiceAccount on the target cluster, with
	// read/write access to a namespace.
	// +required
	KubernetesClusterCredentials DeploymentTargetKubernetesClusterCredentials `json:"kubernetesCredentials"`

	// ClaimRef is the name of the DeploymentTargetClaim, in the namespace of
	// the DeploymentTarget, that the DeploymentTarget is bound to, if any.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +optional
	ClaimRef string `json:"claimRef,omitempty"`
}

// DeploymentTargetKubernetesClusterCredentials are the credentials of the
// cluster of a DeploymentTarget.
type DeploymentTargetKubernetesClusterCredentials struct {
	// DefaultNamespace is the namespace that the credentials give access to,
	// and that deployments go to by default.
	// +required
	DefaultNamespace string `json:"defaultNamespace"`

	// APIURL is the URL of the cluster's Kubernetes API endpoint.
	// +required
	APIURL string `json:"apiURL"`

	// IngressDomain is the ingress domain of the cluster. Not used by the
	// GitOps Service; accepted for compatibility with existing manifests.
	// +optional
	IngressDomain string `json:"ingressDomain,omitempty"`

	// ClusterCredentialsSecret is the name of a Secret, in the namespace of
	// the DeploymentTarget, that contains a kubeconfig for the cluster in its
	// 'kubeconfig' key.
	// +required
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	ClusterCredentialsSecret string `json:"clusterCredentialsSecret"`

	// AllowInsecureSkipTLSVerify, if true, lets the consumer of the
	// credentials connect to an API endpoint with an invalid or self-signed
	// TLS certificate.
	// +optional
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify,omitempty"`
}

// DeploymentTargetStatus is the observed state of a DeploymentTarget.
type DeploymentTargetStatus struct {
	// Phase is the lifecycle phase of the DeploymentTarget: Pending,
	// Available, Bound, Released or Failed.
	// +optional
	Phase DeploymentTargetPhase `json:"phase,omitempty"`

	// Conditions describe the state of the DeploymentTarget.
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
// +kubebuilder:resource:shortName=dt,categories=gitops
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.deploymentTargetClassName`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.spec.claimRef`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.kubernetesCredentials.defaultNamespace`,priority=1
// +kubebuilder:printcolumn:name="API URL",type=string,JSONPath=`.spec.kubernetesCredentials.apiURL`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// DeploymentTarget is a target to deploy to, usually a namespace on a
// Kubernetes cluster, with the credentials to connect to it (like a
// PersistentVolume is a volume). It is created by a user, or dynamically by a
// provisioner for a DeploymentTargetClaim, and is bound to at most one claim.
type DeploymentTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the DeploymentTarget.
	// +required
	Spec DeploymentTargetSpec `json:"spec"`

	// Status is the observed state of the DeploymentTarget.
	// +optional
	Status DeploymentTargetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DeploymentTargetList is a list of DeploymentTargets.
type DeploymentTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the DeploymentTargets.
	Items []DeploymentTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentTarget{}, &DeploymentTargetList{})
}
