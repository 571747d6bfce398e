/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationSpec is the desired state of an Application.
//
// This is the subset of the App Studio Application API that the GitOps
// Service needs; the Application is owned by the application-service.
type ApplicationSpec struct {
	// DisplayName is a user-visible, user-definable name for the Application.
	// +required
	DisplayName string `json:"displayName"`

	// Description is a user-visible, user-definable description of the
	// Application.
	// +optional
	Description string `json:"description,omitempty"`
}

// ApplicationStatus is the observed state of an Application.
type ApplicationStatus struct {
	// Conditions describe the state of the Application.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hasapp,categories=gitops
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Application is a user's application, made of Components (e.g. a frontend,
// a backend and a database). Snapshots, SnapshotEnvironmentBindings and
// PromotionRuns refer to an Application by name.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Application.
	// +optional
	Spec ApplicationSpec `json:"spec,omitempty"`

	// Status is the observed state of the Application.
	// +optional
	Status ApplicationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ApplicationList is a list of Applications.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Applications.
	Items []Application `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Application{}, &ApplicationList{})
}
