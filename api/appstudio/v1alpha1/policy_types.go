/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionPolicySpec binds rules to Environments. The policy is
// cluster-scoped: the platform writes it, tenants cannot edit it, nor what
// binds them to it (their namespace's labels). A promotion into an
// Environment the policy binds waits (reason PolicyDenied) until every rule
// holds. See docs/policies.md.
type PromotionPolicySpec struct {
	// NamespaceSelector selects, by the labels of their Namespace, the
	// namespaces whose Environments the policy binds. Tenants cannot edit
	// their Namespace's labels: this is what makes a policy binding. {}
	// selects every namespace.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// EnvironmentSelector narrows the policy, within those namespaces, to
	// the Environments whose labels match; omitted: every Environment of
	// them. Tenants edit their Environments' labels: a tenant can take an
	// Environment out of a selector by removing a label it requires (In,
	// Exists) or adding one it excludes (NotIn, DoesNotExist). Use it to
	// narrow a policy only where escaping it gains a tenant nothing, and
	// bind what must hold by namespaceSelector (docs/policies.md).
	// +optional
	EnvironmentSelector *metav1.LabelSelector `json:"environmentSelector,omitempty"`

	// Rules are CEL expressions over the facts of a promotion
	// (docs/policies.md); every one must evaluate to true for the promotion
	// to enter the Environment. A rule that does not compile, is not a
	// bool or may cost more than the limit is refused when the policy is
	// written.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Rules []PolicyRule `json:"rules"`

	// ChangeFailureWindow is how far back the source Environment's change
	// failure rate (a fact) is counted; 720h (30 days) when omitted.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('8760h')",message="must be more than 0s and at most 8760h (a year)",reason=FieldValueForbidden
	ChangeFailureWindow *metav1.Duration `json:"changeFailureWindow,omitempty"`
}

// PolicyRule is one rule of a PromotionPolicy.
type PolicyRule struct {
	// Name names the rule in a denial.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Expression is a CEL expression that evaluates to true when the
	// promotion may enter, e.g.
	// `images.all(i, i.registry == 'registry.example.com' && i.digest != '')`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`

	// Message says what the rule asks for, shown in the denial.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// PromotionPolicyStatus is what the sidecar found when it compiled the rules.
type PromotionPolicyStatus struct {
	// ObservedGeneration is the generation the conditions are of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is True when every rule compiled within the cost
	// limit, False (reason InvalidRule) naming the rule that did not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PromotionPolicy condition reasons and the Waiting reason of a denial.
const (
	// PromotionPolicyReasonCompiled: every rule compiled within the cost limit.
	PromotionPolicyReasonCompiled = "RulesCompiled"
	// PromotionPolicyReasonInvalidRule: a rule does not compile, is not a
	// bool or may cost too much (written before the admission webhook was
	// live, or with it off): promotions it binds wait.
	PromotionPolicyReasonInvalidRule = "InvalidRule"

	// WaitingReasonPolicyDenied: a rule of a PromotionPolicy binding the
	// Environment does not hold for the promotion (or could not be evaluated).
	WaitingReasonPolicyDenied = "PolicyDenied"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ppol,categories=gitops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PromotionPolicy is a platform's rules, in CEL, over what a promotion
// contains (images, signatures, the preview, approvers, the source
// Environment's change failure rate, the time), bound to the Environments
// of the namespaces it selects. Cluster-scoped.
type PromotionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PromotionPolicySpec `json:"spec"`

	// +optional
	Status PromotionPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PromotionPolicyList is a list of PromotionPolicies.
type PromotionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PromotionPolicy{}, &PromotionPolicyList{})
}
