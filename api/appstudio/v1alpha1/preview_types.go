/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionPreviewSpec asks what promoting a Snapshot to one Environment
// would change there: the manifests Argo CD would render, diffed against the
// live objects, and a server-side dry-run of them on the target cluster.
// Nothing is written anywhere by a preview.
type PromotionPreviewSpec struct {
	// Snapshot is the name of the Snapshot, in the namespace of the preview.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Snapshot string `json:"snapshot"`

	// Application is the name of the Application, in the namespace of the
	// preview; it must be the Snapshot's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	// +required
	Application string `json:"application"`

	// TargetEnvironment is the name of the Environment, in the namespace of
	// the preview, the promotion would deploy to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as Environment names are)",reason=FieldValueForbidden
	// +required
	TargetEnvironment string `json:"targetEnvironment"`
}

// PreviewObjectError is what the target cluster answered a server-side
// dry-run apply of one object with (admission, quota, RBAC).
type PreviewObjectError struct {
	// Kind is Group/Kind of the object ("apps/Deployment", "ConfigMap").
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Message is the API server's answer, cut to 1 KiB.
	Message string `json:"message"`
}

// PreviewComponentSummary is what promoting one component would change.
type PreviewComponentSummary struct {
	// Name is the component's.
	Name string `json:"name"`
	// ArgoApplication is the name of the Argo CD Application the component
	// is (or would be) deployed by.
	// +optional
	ArgoApplication string `json:"argoApplication,omitempty"`
	// Added, Changed, Removed and Unchanged count the objects Argo CD's
	// sync would create, update, prune and leave alone.
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Removed   int `json:"removed"`
	Unchanged int `json:"unchanged"`
	// Errors counts the objects the dry-run refused.
	Errors int `json:"errors"`
	// Kinds are the kinds (group/Kind, or Kind for the core group) of the
	// objects added, changed or removed, sorted (what promotion policies
	// see of the preview).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	Kinds []string `json:"kinds,omitempty"`
	// RenderError says why the manifests could not be rendered (then nothing
	// else was compared for the component).
	// +optional
	RenderError string `json:"renderError,omitempty"`
	// DryRunErrors are the refused objects, at most 20.
	// +optional
	// +listType=atomic
	DryRunErrors []PreviewObjectError `json:"dryRunErrors,omitempty"`
}

// PromotionPreviewStatus is the result of a preview.
type PromotionPreviewStatus struct {
	// ObservedGeneration is the spec generation the result is of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CompletedAt is when the preview finished; unset while it runs.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Clean says the preview completed and every object passed the dry-run.
	// +optional
	Clean bool `json:"clean,omitempty"`
	// Components summarizes each component of the Snapshot, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []PreviewComponentSummary `json:"components,omitempty"`
	// Diff is the unified diff of every added, changed and removed object
	// (Secrets' data redacted), cut to 32 KiB: the panel's backend serves the
	// whole of it.
	// +optional
	Diff string `json:"diff,omitempty"`
	// DiffTruncated says Diff was cut.
	// +optional
	DiffTruncated bool `json:"diffTruncated,omitempty"`
	// Conditions: Ready (kstatus) and PreviewFailed when the preview could
	// not run.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PromotionPreview condition types and reasons.
const (
	// PromotionPreviewConditionFailed: the preview could not run (its inputs,
	// the repo-server, the target cluster).
	PromotionPreviewConditionFailed = "PreviewFailed"
	// PromotionPreviewReasonInvalid: an input is missing or not the tenant's.
	PromotionPreviewReasonInvalid = "InvalidInput"
)

// PromotionPreview shows what promoting a Snapshot to an Environment would
// change there, without changing anything.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=preview;pp,categories=gitops
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.targetEnvironment`
// +kubebuilder:printcolumn:name="Clean",type=boolean,JSONPath=`.status.clean`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completedAt`
type PromotionPreview struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PromotionPreviewSpec   `json:"spec,omitempty"`
	Status PromotionPreviewStatus `json:"status,omitempty"`
}

// PromotionPreviewList is a list of PromotionPreviews.
// +kubebuilder:object:root=true
type PromotionPreviewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionPreview `json:"items"`
}

// PreviewPolicy is an Environment's rule for promotions into it.
type PreviewPolicy struct {
	// RequiredWithin: a PromotionRun into the Environment starts only when a
	// PromotionPreview of the same Snapshot for it completed clean (no
	// dry-run error) at most this long ago, e.g. "15m".
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +required
	RequiredWithin metav1.Duration `json:"requiredWithin"`
}

func init() {
	SchemeBuilder.Register(&PromotionPreview{}, &PromotionPreviewList{})
}
