/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentSpec is the desired state of a Component.
//
// This is the subset of the App Studio Component API that the GitOps Service
// needs; the Component is owned by the application-service.
type ComponentSpec struct {
	// ComponentName is the name of the Component.
	// +kubebuilder:validation:MinLength=1
	// +required
	ComponentName string `json:"componentName"`

	// Application is the name of the Application, in the namespace of the
	// Component, that the Component belongs to.
	// +kubebuilder:validation:MinLength=1
	// +required
	Application string `json:"application"`

	// ContainerImage is the container image of the Component.
	// +optional
	ContainerImage string `json:"containerImage,omitempty"`

	// Replicas is the number of replicas of the Component's workload.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int `json:"replicas,omitempty"`

	// TargetPort is the port the Component's workload listens on.
	// +optional
	TargetPort int `json:"targetPort,omitempty"`

	// Env is the list of environment variables of the Component's workload.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Source is where the Component is built from.
	// +optional
	Source ComponentSource `json:"source,omitempty"`
}

// ComponentSource is where a Component is built from.
type ComponentSource struct {
	// GitSource is a Git repository the Component is built from.
	// +optional
	GitSource *GitSource `json:"git,omitempty"`
}

// GitSource is a location in a Git repository.
type GitSource struct {
	// URL is the URL of the Git repository.
	// +kubebuilder:validation:MinLength=1
	// +required
	URL string `json:"url"`

	// Revision is the branch, tag or commit of the repository to use. The
	// repository's default branch when empty.
	// +optional
	Revision string `json:"revision,omitempty"`

	// Context is the path, within the repository, of the Component's source.
	// The root of the repository when empty.
	// +optional
	Context string `json:"context,omitempty"`
}

// ComponentStatus is the observed state of a Component.
type ComponentStatus struct {
	// Conditions describe the state of the Component.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// GitOps is the GitOps repository the application-service generated the
	// Component's deployment resources into. A SnapshotEnvironmentBinding
	// falls back to it when its .status.components does not list the
	// Component.
	// +optional
	GitOps GitOpsStatus `json:"gitops,omitempty"`
}

// GitOpsStatus is the GitOps repository of a Component.
type GitOpsStatus struct {
	// RepositoryURL is the URL of the GitOps repository.
	// +optional
	RepositoryURL string `json:"repositoryURL,omitempty"`

	// Branch is the branch of the GitOps repository.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Context is the path, within the GitOps repository, of the Component's
	// resources.
	// +optional
	Context string `json:"context,omitempty"`

	// CommitID is the commit of the GitOps repository that holds the latest
	// generated resources.
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hascmp;comp,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.containerImage`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Component is one deployable part of an Application (e.g. its frontend).
type Component struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Component.
	// +required
	Spec ComponentSpec `json:"spec"`

	// Status is the observed state of the Component.
	// +optional
	Status ComponentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ComponentList is a list of Components.
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Components.
	Items []Component `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Component{}, &ComponentList{})
}
