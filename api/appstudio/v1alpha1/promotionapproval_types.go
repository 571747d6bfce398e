/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionApprovalSpec is one approval of one Snapshot into one Environment.
type PromotionApprovalSpec struct {
	// Snapshot is the name of the approved Snapshot, in the namespace of the
	// approval.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	Snapshot string `json:"snapshot"`

	// SnapshotIdentity, when set, is what was approved: the UID and the
	// content digest (Snapshot.ContentDigest) of the Snapshot the approver
	// looked at; the approval counts only for that Snapshot object with that
	// content (`argocd gitops approve` and the panel set both). Unset, it
	// counts only for a Snapshot of that name created in an earlier second
	// than the approval (one re-created after it is another Snapshot).
	SnapshotIdentity `json:",inline"`

	// Environment is the name of the Environment, in the namespace of the
	// approval, the Snapshot may enter.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63 && self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be the name of an Environment of this namespace (a DNS-1123 label)",reason=FieldValueForbidden
	Environment string `json:"environment"`

	// Application, if set, restricts the approval to the promotions of that
	// Application (the Snapshot's own).
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	Application string `json:"application,omitempty"`

	// Approver is who approves. The admission policy
	// gitops-service-promotion-approvals makes it the identity the API server
	// authenticated: user the requester's user name and groups a subset of
	// its groups, except for the GitOps Service's ServiceAccount, which
	// approves on behalf of an Argo CD user argocd-server authenticated (the
	// panel), with argocd: before each name.
	// +required
	Approver Approver `json:"approver"`

	// Comment is free text, e.g. the change ticket.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Comment string `json:"comment,omitempty"`
}

// Approver is the identity that approved.
type Approver struct {
	// User is the approver's user name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	User string `json:"user"`

	// Groups are the approver's groups that may count for the approval.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	Groups []string `json:"groups,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=approval,categories=gitops
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.environment`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.spec.approver.user`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PromotionApproval approves one Snapshot into one Environment of its
// namespace, for a gate that asks for approvals (Environment
// .spec.gates.approvals). It is immutable: to withdraw it, delete it.
type PromotionApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the approval. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a PromotionApproval is immutable"
	Spec PromotionApprovalSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// PromotionApprovalList is a list of PromotionApprovals.
type PromotionApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the PromotionApprovals.
	Items []PromotionApproval `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromotionApproval{}, &PromotionApprovalList{})
}
