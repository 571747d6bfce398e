/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionRunState is the state of a PromotionRun as a whole.
// +kubebuilder:validation:Enum=Waiting;Active;Completed
type PromotionRunState string

const (
	// PromotionRunStateWaiting: the promotion is not yet scheduled, e.g.
	// another promotion of the Application is active.
	PromotionRunStateWaiting PromotionRunState = "Waiting"
	// PromotionRunStateActive: the promotion is in progress.
	PromotionRunStateActive PromotionRunState = "Active"
	// PromotionRunStateCompleted: the promotion finished, successfully or not
	// (see .status.completionResult).
	PromotionRunStateCompleted PromotionRunState = "Completed"
)

// PromotionRunCompleteResult is the result of a completed PromotionRun.
// +kubebuilder:validation:Enum=Success;Failure
type PromotionRunCompleteResult string

const (
	// PromotionRunCompleteResultSuccess: every target Environment was
	// deployed successfully.
	PromotionRunCompleteResultSuccess PromotionRunCompleteResult = "Success"
	// PromotionRunCompleteResultFailure: the promotion failed or timed out.
	PromotionRunCompleteResultFailure PromotionRunCompleteResult = "Failure"
)

// PromotionRunEnvironmentStatusField is the state of one step (one
// Environment) of a PromotionRun.
// +kubebuilder:validation:Enum=in-progress;success;failure
type PromotionRunEnvironmentStatusField string

const (
	// PromotionRunEnvironmentStatusInProgress: the promotion to the
	// Environment is in progress.
	PromotionRunEnvironmentStatusInProgress PromotionRunEnvironmentStatusField = "in-progress"
	// PromotionRunEnvironmentStatusSuccess: the Environment was deployed
	// successfully.
	PromotionRunEnvironmentStatusSuccess PromotionRunEnvironmentStatusField = "success"
	// PromotionRunEnvironmentStatusFailure: the promotion to the Environment
	// failed.
	PromotionRunEnvironmentStatusFailure PromotionRunEnvironmentStatusField = "failure"
)

// PromotionRunSpec is the desired state of a PromotionRun. Exactly one of
// manualPromotion and automatedPromotion must be set.
// +kubebuilder:validation:XValidation:rule="has(self.manualPromotion) != has(self.automatedPromotion)",message="exactly one of manualPromotion and automatedPromotion must be set"
// +kubebuilder:validation:XValidation:rule="has(self.requestedBy) == has(oldSelf.requestedBy) && (!has(self.requestedBy) || self.requestedBy == oldSelf.requestedBy)",message="requestedBy is immutable: it is set when the PromotionRun is created"
type PromotionRunSpec struct {
	// Snapshot is the name of the Snapshot, in the namespace of the
	// PromotionRun, to promote between Environments.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Snapshot string `json:"snapshot"`

	// Application is the name of the Application, in the namespace of the
	// PromotionRun, to promote. It must be the Application of the Snapshot.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Application string `json:"application"`

	// ManualPromotion promotes the Snapshot to a single Environment. Not to
	// be set together with AutomatedPromotion.
	// +optional
	ManualPromotion *ManualPromotionConfiguration `json:"manualPromotion,omitempty"`

	// AutomatedPromotion promotes the Snapshot along the Environment digraph,
	// beginning with InitialEnvironment. Not to be set together with
	// ManualPromotion.
	// +optional
	AutomatedPromotion *AutomatedPromotionConfiguration `json:"automatedPromotion,omitempty"`

	// RequestedBy is who asked for the promotion, recorded in the
	// PromotionHistory. The admission policy gitops-service-promotion-requesters
	// makes it the identity the API server authenticated when the run is
	// created (user the requester's user name, groups a subset of its groups),
	// except for the GitOps Service's ServiceAccount, which also requests on
	// behalf of an Argo CD user argocd-server authenticated (the panel), with
	// argocd: before each name. Unset, the history says the requester is
	// unknown. It cannot be set, changed or removed after creation.
	// +optional
	RequestedBy *Requester `json:"requestedBy,omitempty"`
}

// Requester is the identity that asked for a promotion.
type Requester struct {
	// User is the requester's user name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	User string `json:"user"`

	// Groups are some of the requester's groups.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	Groups []string `json:"groups,omitempty"`
}

// ManualPromotionConfiguration is the configuration of a manual promotion.
// +kubebuilder:validation:XValidation:rule="!(has(self.rollback) && self.rollback && has(self.force) && self.force)",message="a rollback is not forced: force is for promoting a rejected Snapshot"
type ManualPromotionConfiguration struct {
	// TargetEnvironment is the name of the Environment, in the namespace of
	// the PromotionRun, to promote the Snapshot to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	// +required
	TargetEnvironment string `json:"targetEnvironment"`

	// Force promotes the Snapshot even when a rollback rejected it.
	// +optional
	Force bool `json:"force,omitempty"`

	// Rollback rolls the Snapshot back out of TargetEnvironment instead of
	// promoting it there: the binding points at the last other Snapshot
	// verified there, the Snapshot is rejected for the Application and
	// automated promotion out of TargetEnvironment holds until released
	// (see rollback_types.go).
	// +optional
	Rollback bool `json:"rollback,omitempty"`
}

// AutomatedPromotionConfiguration is the configuration of an automated
// promotion.
type AutomatedPromotionConfiguration struct {
	// InitialEnvironment is the name of the Environment, in the namespace of
	// the PromotionRun, to begin iterating through the Environment digraph
	// with.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	// +required
	InitialEnvironment string `json:"initialEnvironment"`
}

// PromotionRunStatus is the observed state of a PromotionRun.
type PromotionRunStatus struct {
	// State is the state of the promotion as a whole: Waiting (not yet
	// scheduled), Active (in progress) or Completed (successfully or not).
	// +optional
	State PromotionRunState `json:"state,omitempty"`

	// CompletionResult is the result of a Completed promotion: Success or
	// Failure.
	// +optional
	CompletionResult PromotionRunCompleteResult `json:"completionResult,omitempty"`

	// EnvironmentStatus has one entry per step of the promotion: a single
	// step (the targetEnvironment) for a manual promotion, one step per
	// Environment promoted to for an automated promotion.
	// +optional
	EnvironmentStatus []PromotionRunEnvironmentStatus `json:"environmentStatus,omitempty"`

	// ActiveBindings lists the names of the SnapshotEnvironmentBindings that
	// the promotion is currently deploying with: one for a manual promotion,
	// possibly several (one per Environment at a depth of the digraph) for an
	// automated promotion.
	// +optional
	ActiveBindings []string `json:"activeBindings,omitempty"`

	// Conditions describe the state of the PromotionRun; a condition of type
	// ErrorOccurred reports reconciliation errors.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// PromotionStartTime is when the promotion became Active; the promotion
	// fails if it does not complete within its timeout from this time.
	// +optional
	PromotionStartTime metav1.Time `json:"promotionStartTime,omitempty"`
	// ObservedGeneration is the spec generation the sidecar last acted on
	// (kstatus: a Ready condition is current only when this equals
	// metadata.generation).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Rollback is what a rollback decided when it started: the Snapshot it
	// rolls back to.
	// +optional
	Rollback *RollbackStatus `json:"rollback,omitempty"`

	// SnapshotIdentity is the UID and content digest of the Snapshot the run
	// deploys, recorded when it first deploys: if the Snapshot is replaced
	// by another of the same name meanwhile, the run fails (SnapshotReplaced)
	// rather than deploy what was not gated; its steps' verifications count
	// (soak time) only for this Snapshot.
	SnapshotIdentity `json:",inline"`
}

// PromotionRunEnvironmentStatus is the state of one step of a PromotionRun.
type PromotionRunEnvironmentStatus struct {
	// Step is the 1-based number of the step.
	// +kubebuilder:validation:Minimum=1
	// +required
	Step int `json:"step"`

	// EnvironmentName is the name of the Environment promoted to in this step.
	// +required
	EnvironmentName string `json:"environmentName"`

	// Status is the state of the step: in-progress, success or failure.
	// +required
	Status PromotionRunEnvironmentStatusField `json:"status"`

	// DisplayStatus is a human-readable description of the state of the step.
	// +optional
	DisplayStatus string `json:"displayStatus,omitempty"`

	// StartTime is when the step entered the Environment (its gates passed);
	// the step's timeout counts from then.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// VerifiedTime is when the Snapshot was verified in the Environment (the
	// step succeeded); a soak time of the Environment counts from then.
	// +optional
	VerifiedTime *metav1.Time `json:"verifiedTime,omitempty"`

	// Digests are the image digests the components run in the Environment,
	// pinned when first observed after the step started (RunningDigest).
	// +optional
	// +listType=map
	// +listMapKey=component
	// +kubebuilder:validation:MaxItems=256
	Digests []RunningDigest `json:"digests,omitempty"`
	// Analysis are the results of the Environment's analysis checks, from
	// when the step was deployed; the step is verified once each passed.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	Analysis []AnalysisCheckStatus `json:"analysis,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=apr;promotion,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.manualPromotion.targetEnvironment`,priority=1
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.completionResult`
// +kubebuilder:printcolumn:name="Waiting",type=string,JSONPath=`.status.conditions[?(@.type=="Waiting")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PromotionRun promotes a Snapshot of an Application to an Environment
// (manual promotion) or along the digraph of Environments (automated
// promotion), through SnapshotEnvironmentBindings. Its spec is immutable.
type PromotionRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the PromotionRun. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	// +required
	Spec PromotionRunSpec `json:"spec"`

	// Status is the observed state of the PromotionRun.
	// +optional
	Status PromotionRunStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PromotionRunList is a list of PromotionRuns.
type PromotionRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the PromotionRuns.
	Items []PromotionRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromotionRun{}, &PromotionRunList{})
}
