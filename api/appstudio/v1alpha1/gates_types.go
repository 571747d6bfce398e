/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionGates are the conditions a promotion must meet to enter an
// Environment (freeze, approvals) or to leave it for its children (soak
// time). Whoever may edit the Environment sets them; a PromotionRun held by
// a gate carries a Waiting condition that says what it waits for and until when.
type PromotionGates struct {
	// SoakTime: a Snapshot leaves this Environment for its child Environments
	// only after it has run here, verified, for at least this long (counted
	// from the end of the PromotionRun step that verified it here). Both an
	// automated promotion and a manual PromotionRun into a child wait.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('8760h')",message="must be between 0s and 8760h (a year)",reason=FieldValueForbidden
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// FreezeWindows are recurring windows in which no promotion enters this
	// Environment; a promotion waits and starts when the window closes.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	FreezeWindows []FreezeWindow `json:"freezeWindows,omitempty"`

	// Freeze is the explicit freeze switch (an incident, "stop the line"):
	// while frozen is true no promotion enters this Environment.
	// +optional
	Freeze *FreezeSwitch `json:"freeze,omitempty"`

	// Approvals: a promotion enters this Environment only after the given
	// number of PromotionApprovals for its Snapshot and this Environment by
	// distinct approvers named here.
	// +optional
	Approvals *ApprovalGate `json:"approvals,omitempty"`

	// Signatures: every image of a Snapshot must be signed (and/or attested)
	// by the given keys or identities before a promotion enters this
	// Environment (signature_types.go).
	// +optional
	Signatures *SignatureGate `json:"signatures,omitempty"`

	// Rollbacks says which gates also hold a rollback into this Environment.
	// By default none do: a freeze or a missing approval does not block the
	// way back to a Snapshot that was verified here.
	// +optional
	Rollbacks *RollbackGates `json:"rollbacks,omitempty"`
}

// FreezeWindow is a recurring window: it opens at every time the cron
// schedule gives, in the time zone, and lasts for the duration.
type FreezeWindow struct {
	// Schedule is a standard five-field cron expression (minute hour
	// day-of-month month day-of-week) or a descriptor (@daily, @weekly,
	// @monthly, @yearly) at which the window opens.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`self.matches('^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$') || self.matches('^\\s*[0-9*/,\\-]+\\s+[0-9*/,\\-]+\\s+[0-9*/,\\-?]+\\s+[0-9A-Za-z*/,\\-]+\\s+[0-9A-Za-z*/,\\-?]+\\s*$')`,message="must be a five-field cron expression (minute hour day-of-month month day-of-week) or @yearly, @monthly, @weekly, @daily or @hourly",reason=FieldValueForbidden
	Schedule string `json:"schedule"`

	// Duration is how long the window stays open, e.g. 2h or 72h.
	// +required
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('8760h')",message="must be more than 0s and at most 8760h (a year)",reason=FieldValueForbidden
	Duration metav1.Duration `json:"duration"`

	// TimeZone is the IANA time zone of the schedule, e.g. Europe/Berlin;
	// UTC when empty. The API server cannot check that the zone exists: a
	// PromotionRun into the Environment waits with reason FreezeWindow and
	// says so when it does not.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`

	// Reason is shown to whoever waits for the window to close, e.g.
	// "year-end freeze".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
}

// FreezeSwitch is the explicit freeze of an Environment.
type FreezeSwitch struct {
	// Frozen: no promotion enters the Environment until it is false again.
	// +required
	Frozen bool `json:"frozen"`

	// Reason says why, e.g. the incident.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`

	// By is who froze the Environment (informational: the CLI and the panel
	// set it to the identity they act for).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	By string `json:"by,omitempty"`

	// Since is when the Environment was frozen (informational).
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// ApprovalGate asks for approvals before a promotion enters an Environment.
// +kubebuilder:validation:XValidation:rule="has(self.groups) || !has(self.users) || self.required <= size(self.users)",message="required must not be more than the number of users when no group is named",fieldPath=".required",reason=FieldValueForbidden
type ApprovalGate struct {
	// Required is how many approvals by distinct approvers are needed.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Required int32 `json:"required"`

	// Users who may approve: Kubernetes user names as the API server
	// authenticates them (e.g. alice, system:serviceaccount:ns:name), or
	// argocd:<name> for an Argo CD user who approves through the panel or
	// the CLI logged in to Argo CD. When both users and groups are empty,
	// anyone who may create PromotionApprovals in the namespace may approve.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	Users []string `json:"users,omitempty"`

	// Groups whose members may approve: Kubernetes groups, or argocd:<group>
	// for an Argo CD group.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	Groups []string `json:"groups,omitempty"`
}

// RollbackGates says which gates hold a rollback into the Environment.
type RollbackGates struct {
	// Freeze: a frozen Environment (switch or window) holds rollbacks too.
	// +optional
	Freeze bool `json:"freeze,omitempty"`
	// Approvals: a rollback needs the approvals too.
	// +optional
	Approvals bool `json:"approvals,omitempty"`
}

// Reasons of a PromotionRun's Waiting condition: what the run waits for.
// The condition's message says what exactly and until when.
const (
	// PromotionRunConditionWaiting is True while a run does not move, with one
	// of the reasons below; it is removed when the run moves.
	PromotionRunConditionWaiting = "Waiting"

	// WaitingReasonRunActive: another run of the Application goes first.
	WaitingReasonRunActive = "RunActive"
	// WaitingReasonSoakTime: the Snapshot soaks in the parent Environment.
	WaitingReasonSoakTime = "SoakTime"
	// WaitingReasonFreezeWindow: a freeze window of the Environment is open.
	WaitingReasonFreezeWindow = "FreezeWindow"
	// WaitingReasonFrozen: the Environment's freeze switch is on.
	WaitingReasonFrozen = "Frozen"
	// WaitingReasonAwaitingApproval: fewer approvals than required.
	WaitingReasonAwaitingApproval = "AwaitingApproval"
	// WaitingReasonApprovalIdentityNotEnforced: the API server does not
	// enforce who approves (the shipped admission policies are missing or
	// changed), so no approval counts.
	WaitingReasonApprovalIdentityNotEnforced = "ApprovalIdentityNotEnforced"
	// WaitingReasonClaimNotBound: the Environment's DeploymentTargetClaim is not bound.
	WaitingReasonClaimNotBound = "ClaimNotBound"
	// WaitingReasonSnapshotRejected: the Snapshot is rejected for the Application.
	WaitingReasonSnapshotRejected = "SnapshotRejected"
	// WaitingReasonPromotionHeld: automated promotion out of the Environment is held (after a rollback).
	WaitingReasonPromotionHeld = "PromotionHeld"
	// WaitingReasonPreviewRequired: the Environment requires a clean preview first.
	WaitingReasonPreviewRequired = "PreviewRequired"
)
