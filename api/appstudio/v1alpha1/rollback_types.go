/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rollback and history of promotions (issue 24, item 2 and 4).
//
// A rollback is a PromotionRun with spec.manualPromotion.rollback: it rolls
// spec.snapshot (the bad one) back out of spec.manualPromotion.targetEnvironment
// to the last other Snapshot verified there. The PromotionRun reconciler alone writes the status
// of the PromotionHistory of each (Application, Environment): what ran there,
// the Snapshots rejected for the Application and the hold a rollback puts on
// automated promotion out of the Environment. People release the hold through
// the history's spec (spec.releasedAt); nothing else of it is theirs to write.

const (
	// PromotionRunReasonSnapshotRejected: the Snapshot was rolled back out of
	// an Environment of the Application; a manual promotion of it is refused
	// unless spec.manualPromotion.force is set, an automated one always.
	PromotionRunReasonSnapshotRejected = "SnapshotRejected"
	// PromotionRunReasonPromotionHeld: an automated promotion waits to leave
	// an Environment that was rolled back until the hold is released.
	PromotionRunReasonPromotionHeld = "PromotionHeld"

	// MaxHistoryEntries bounds a PromotionHistory's entries: the oldest go first.
	MaxHistoryEntries = 50
	// MaxRejectedSnapshots bounds a PromotionHistory's rejected Snapshots.
	MaxRejectedSnapshots = 100
)

// IsRollback says whether the run is a rollback (manualPromotion.rollback).
func (s *PromotionRunSpec) IsRollback() bool {
	return s.ManualPromotion != nil && s.ManualPromotion.Rollback
}

// RollbackStatus is what a rollback decided when it started.
type RollbackStatus struct {
	// Snapshot is the Snapshot the Environment is rolled back to: the last
	// one, other than the rolled-back spec.snapshot and not rejected, that
	// was verified there.
	// +required
	Snapshot string `json:"snapshot"`
}

// RollbackPolicy says when an Environment asks for a rollback by itself.
type RollbackPolicy struct {
	// Automatic: when a promotion into this Environment fails verification or
	// times out, the sidecar creates a rollback (a PromotionRun named
	// <run>-rollback) of its Snapshot out of this Environment.
	// +optional
	Automatic bool `json:"automatic,omitempty"`
}

// PromotionKind says whether a history entry is a promotion or a rollback.
// +kubebuilder:validation:Enum=Promotion;Rollback
type PromotionKind string

const (
	PromotionKindPromotion PromotionKind = "Promotion"
	PromotionKindRollback  PromotionKind = "Rollback"
)

// PromotionHistorySpec names the Application and Environment of a history,
// and holds what people may change: the release of a hold.
// +kubebuilder:validation:XValidation:rule="self.application == oldSelf.application && self.environment == oldSelf.environment",message="application and environment are immutable"
type PromotionHistorySpec struct {
	// Application is the name of the Application, in the history's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Application string `json:"application"`

	// Environment is the name of the Environment, in the history's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	// +required
	Environment string `json:"environment"`

	// ReleasedAt releases the hold a rollback put on automated promotion out
	// of the Environment: the hold is released when this is at or after
	// status.hold.since. A later rollback holds again. Set it with
	// `argocd gitops rollback <env> --application A --release` or
	// `kubectl patch promotionhistory <app>.<env> --type merge -p '{"spec":{"releasedAt":"<now, RFC 3339>"}}'`.
	// +optional
	ReleasedAt *metav1.Time `json:"releasedAt,omitempty"`
}

// PromotionHistoryEntry is one promotion (or rollback) into the Environment.
type PromotionHistoryEntry struct {
	// PromotionRun is the name of the run; it may be deleted since.
	// +required
	PromotionRun string `json:"promotionRun"`
	// PromotionRunUID tells runs of one name apart.
	// +required
	PromotionRunUID string `json:"promotionRunUID"`
	// Kind is Promotion or Rollback.
	// +required
	Kind PromotionKind `json:"kind"`
	// Snapshot is the Snapshot deployed (for a rollback, the one rolled back to).
	// +required
	Snapshot string `json:"snapshot"`
	// SnapshotIdentity is the deployed Snapshot's UID and content digest:
	// a Snapshot re-created under the same name is not this one.
	SnapshotIdentity `json:",inline"`
	// SnapshotCreated is when the Snapshot was created (lead time starts then).
	// +optional
	SnapshotCreated *metav1.Time `json:"snapshotCreated,omitempty"`
	// StartTime is when the run was created (for a rollback: when the failure
	// was declared).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the Environment's step ended: verified or failed.
	// +required
	CompletionTime metav1.Time `json:"completionTime"`
	// Result is Success (verified there) or Failure.
	// +required
	Result PromotionRunCompleteResult `json:"result"`
	// Message says what happened (the step's display status).
	// +optional
	Message string `json:"message,omitempty"`
	// PromotedBy is who created the run, when an identity the API server
	// authenticated is known; empty when unknown.
	// +optional
	PromotedBy string `json:"promotedBy,omitempty"`
	// ApprovedBy are the approvers the Environment's approval gate counted
	// for this Snapshot (its UID and content), one per person, sorted; empty
	// when the Environment asks for no approval, when approvals cannot count
	// (the API server does not enforce who approves), and for a rollback.
	// +optional
	ApprovedBy []string `json:"approvedBy,omitempty"`
	// Verifications are what was verified of each image of the Snapshot
	// against the Environment's signature requirements (its
	// .spec.gates.signatures) when the promotion entered; empty when it
	// requires none, and for a rollback.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Verifications []ImageVerification `json:"verifications,omitempty"`
	// RolledBackBy is the rollback that rolled this Snapshot back out of the
	// Environment, if any.
	// +optional
	RolledBackBy string `json:"rolledBackBy,omitempty"`
	// Analysis are the results of the Environment's analysis checks for
	// this step (a failed one is why the step failed).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	Analysis []AnalysisCheckStatus `json:"analysis,omitempty"`
}

// RejectedSnapshot is a Snapshot rolled back out of the Environment: it is
// rejected for the Application (in every Environment).
type RejectedSnapshot struct {
	// Snapshot is the rejected Snapshot's name.
	// +required
	Snapshot string `json:"snapshot"`
	// SnapshotIdentity is the rejected Snapshot's UID and content digest,
	// when known: a Snapshot re-created under the name is not rejected.
	// Without it (written before identities were), every Snapshot of the
	// name is.
	SnapshotIdentity `json:",inline"`
	// PromotionRun is the rollback that rejected it.
	// +required
	PromotionRun string `json:"promotionRun"`
	// Time is when it was rejected.
	// +required
	Time metav1.Time `json:"time"`
}

// PromotionHold holds automated promotion out of the Environment.
type PromotionHold struct {
	// Since is when the rollback put the hold.
	// +required
	Since metav1.Time `json:"since"`
	// PromotionRun is the rollback that put it.
	// +required
	PromotionRun string `json:"promotionRun"`
	// Snapshot is the Snapshot rolled back.
	// +required
	Snapshot string `json:"snapshot"`
}

// PromotionHistoryStatus is written by the sidecar only.
type PromotionHistoryStatus struct {
	// Entries are the promotions and rollbacks into the Environment, oldest
	// first, at most MaxHistoryEntries (50).
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Entries []PromotionHistoryEntry `json:"entries,omitempty"`
	// Rejected are the Snapshots rolled back out of the Environment, oldest
	// first, at most MaxRejectedSnapshots (100).
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Rejected []RejectedSnapshot `json:"rejected,omitempty"`
	// Hold is the last rollback's hold on automated promotion out of the
	// Environment; it is released when spec.releasedAt is at or after its since.
	// +optional
	Hold *PromotionHold `json:"hold,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=aph;history,categories=gitops
// +kubebuilder:printcolumn:name="Application",type=string,JSONPath=`.spec.application`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Last",type=string,JSONPath=`.status.entries[-1:].snapshot`
// +kubebuilder:printcolumn:name="Result",type=string,JSONPath=`.status.entries[-1:].result`
// +kubebuilder:printcolumn:name="Held-Since",type=date,JSONPath=`.status.hold.since`
// +kubebuilder:printcolumn:name="Released",type=date,JSONPath=`.spec.releasedAt`

// PromotionHistory is the bounded history of what ran in one Environment for
// one Application (named <application>.<environment>), kept by the sidecar
// apart from the PromotionRuns so that it survives their deletion; it also
// records the Snapshots rejected by rollbacks and the hold on automated
// promotion out of the Environment.
type PromotionHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PromotionHistorySpec `json:"spec"`
	// +optional
	Status PromotionHistoryStatus `json:"status,omitempty"`
}

// PromotionHistoryName names the PromotionHistory of app in env:
// <app>.<env> (an Environment's name has no dot, so no two pairs share it),
// hashed when too long for a name.
func PromotionHistoryName(app, env string) string {
	name := app + "." + env
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return app[:253-len(env)-1-17] + "-" + hex.EncodeToString(sum[:8]) + "." + env
}

// Held says whether automated promotion out of the Environment is held.
func (h *PromotionHistory) Held() bool {
	if h == nil || h.Status.Hold == nil {
		return false
	}
	return h.Spec.ReleasedAt == nil || h.Spec.ReleasedAt.Before(&h.Status.Hold.Since)
}

// +kubebuilder:object:root=true

// PromotionHistoryList is a list of PromotionHistories.
type PromotionHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionHistory `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromotionHistory{}, &PromotionHistoryList{})
}
