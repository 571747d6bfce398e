/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotEnvironmentBindingSpec is the desired state of a
// SnapshotEnvironmentBinding.
type SnapshotEnvironmentBindingSpec struct {
	// Application is the name of the Application, in the namespace of the
	// binding, that is deployed. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="application is immutable"
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Application string `json:"application"`

	// Environment is the name of the Environment, in the namespace of the
	// binding, that the Application is deployed to. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="environment is immutable"
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	// +required
	Environment string `json:"environment"`

	// Snapshot is the name of the Snapshot, in the namespace of the binding,
	// that gives the container images of the Application's Components.
	// Changing it deploys another Snapshot (a promotion).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Snapshot string `json:"snapshot"`

	// Components is the configuration of each Component in this Environment,
	// used when generating the GitOps repository resources.
	// +optional
	Components []BindingComponent `json:"components,omitempty"`
}

// BindingComponent is the configuration of one Component in the
// Environment of a SnapshotEnvironmentBinding.
type BindingComponent struct {
	// Name is the name of a Component in the namespace of the binding.
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`

	// Configuration is the Component's configuration in this Environment.
	// +optional
	Configuration BindingComponentConfiguration `json:"configuration,omitempty"`
}

// BindingComponentConfiguration is the configuration of a Component in an
// Environment.
type BindingComponentConfiguration struct {
	// Env is the list of environment variables of the Component in this
	// Environment.
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []EnvVarPair `json:"env,omitempty"`

	// Replicas is the number of replicas of the Component in this Environment.
	// A pointer: 0 is a valid number of replicas, distinct from unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int `json:"replicas,omitempty"`

	// Resources are the compute resources of the Component in this
	// Environment.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SnapshotEnvironmentBindingStatus is the observed state of a
// SnapshotEnvironmentBinding.
type SnapshotEnvironmentBindingStatus struct {
	// GitOpsDeployments lists the GitOpsDeployments, owned by the binding,
	// that deploy the Components of the Application to the Environment: one
	// per Component.
	// +optional
	GitOpsDeployments []BindingStatusGitOpsDeployment `json:"gitopsDeployments,omitempty"`

	// Components gives the GitOps repository of each Component. Written by the
	// application-service.
	// +optional
	Components []BindingComponentStatus `json:"components,omitempty"`

	// GitOpsRepoConditions describe operations on the GitOps repository, e.g.
	// problems generating or processing it. Written by the
	// application-service.
	// +listType=map
	// +listMapKey=type
	// +optional
	GitOpsRepoConditions []metav1.Condition `json:"gitopsRepoConditions,omitempty"`

	// BindingConditions report errors of the SnapshotEnvironmentBinding
	// reconciler: type ErrorOccurred, reasons ErrorOccurred,
	// GitOpsRepoNotReady, WaitingForComponentStatus, DuplicateComponents,
	// ErrorGeneratingGitOpsDeployment.
	// +listType=map
	// +listMapKey=type
	// +optional
	BindingConditions []metav1.Condition `json:"bindingConditions,omitempty"`

	// ComponentDeploymentConditions describe the deployment of all the
	// Components: type AllComponentsDeployed, reason CommitsSynced (True),
	// CommitsUnsynced (False) or ErrorOccurred, message
	// "N of M components deployed".
	// +listType=map
	// +listMapKey=type
	// +optional
	ComponentDeploymentConditions []metav1.Condition `json:"componentDeploymentConditions,omitempty"`

	// Conditions hold Ready, the kstatus summary of the binding (True once
	// every Component is deployed, False with the reason of a refusal,
	// Unknown in progress); the seed's conditions above stay as they are.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the sidecar last acted on
	// (kstatus: a Ready condition is current only when this equals
	// metadata.generation).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Snapshot is the Snapshot the binding was pointed at: its name and
	// identity, recorded when the binding is first seen pointing at that name
	// (or as the PromotionRun that pointed it recorded it, annotation
	// AnnotationBoundSnapshot). While spec.snapshot keeps that name, a
	// Snapshot of another identity (deleted and re-created) is not deployed:
	// reason SnapshotReplaced (docs/gates.md).
	// +optional
	Snapshot *BoundSnapshot `json:"snapshot,omitempty"`
}

// AnnotationBoundSnapshot on a SnapshotEnvironmentBinding is the Snapshot a
// PromotionRun let through its gates and pointed the binding at: the JSON of
// a BoundSnapshot, written with spec.snapshot in one patch. It counts only
// while its name is spec.snapshot.
const AnnotationBoundSnapshot = "appstudio.redhat.com/bound-snapshot"

// BoundSnapshot is a Snapshot's name and identity.
type BoundSnapshot struct {
	// Name is the Snapshot's name (spec.snapshot when recorded).
	// +required
	Name string `json:"name"`

	// SnapshotIdentity is the Snapshot's UID and content digest.
	SnapshotIdentity `json:",inline"`
}

// BindingStatusGitOpsDeployment is a GitOpsDeployment that deploys one
// Component of a SnapshotEnvironmentBinding.
type BindingStatusGitOpsDeployment struct {
	// ComponentName is the name of the Component deployed.
	// +required
	ComponentName string `json:"componentName"`

	// GitOpsDeployment is the name of the GitOpsDeployment that deploys the
	// Component to the Environment.
	// +optional
	GitOpsDeployment string `json:"gitopsDeployment,omitempty"`

	// GitOpsDeploymentSyncStatus is the sync status of the GitOpsDeployment:
	// Synced, OutOfSync or Unknown.
	// +optional
	GitOpsDeploymentSyncStatus string `json:"syncStatus,omitempty"`

	// GitOpsDeploymentHealthStatus is the health of the GitOpsDeployment:
	// Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	GitOpsDeploymentHealthStatus string `json:"health,omitempty"`

	// GitOpsDeploymentCommitID is the commit of the GitOps repository that the
	// GitOpsDeployment last synced.
	// +optional
	GitOpsDeploymentCommitID string `json:"commitID,omitempty"`
}

// BindingComponentStatus is the GitOps repository of one Component of a
// SnapshotEnvironmentBinding.
type BindingComponentStatus struct {
	// Name is the name of the Component.
	// +required
	Name string `json:"name"`

	// GitOpsRepository is where the Component's resources for this Environment
	// were generated.
	// +required
	GitOpsRepository BindingComponentGitOpsRepository `json:"gitopsRepository"`
}

// BindingComponentGitOpsRepository is a location in a GitOps repository.
type BindingComponentGitOpsRepository struct {
	// URL is the URL of the GitOps repository.
	// +required
	URL string `json:"url"`

	// Branch is the branch of the GitOps repository to deploy from; it
	// becomes the targetRevision of the GitOpsDeployment.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Path is the path, within the GitOps repository, of the resources to
	// deploy.
	// +optional
	Path string `json:"path,omitempty"`

	// GeneratedResources lists the files generated in Path.
	// +optional
	GeneratedResources []string `json:"generatedResources,omitempty"`

	// CommitID is the commit of the GitOps repository that holds the
	// generated resources.
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=seb,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Deployed",type=string,JSONPath=`.status.componentDeploymentConditions[?(@.type=="AllComponentsDeployed")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// SnapshotEnvironmentBinding deploys a Snapshot of an Application to an
// Environment: the GitOps Service creates one GitOpsDeployment per Component.
// There should be at most one binding per Application and Environment in a
// namespace.
type SnapshotEnvironmentBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the SnapshotEnvironmentBinding.
	// +required
	Spec SnapshotEnvironmentBindingSpec `json:"spec"`

	// Status is the observed state of the SnapshotEnvironmentBinding.
	// +optional
	Status SnapshotEnvironmentBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SnapshotEnvironmentBindingList is a list of SnapshotEnvironmentBindings.
type SnapshotEnvironmentBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the SnapshotEnvironmentBindings.
	Items []SnapshotEnvironmentBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SnapshotEnvironmentBinding{}, &SnapshotEnvironmentBindingList{})
}
