/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionPreviewSpec asks what promoting a Snapshot to one Environment
// (targetEnvironment), or to every Environment of the namespace's path
// (allEnvironments: a release preview), would change there: the manifests
// Argo CD would render, diffed against the live objects, and a server-side
// dry-run of them on the target cluster. Nothing is written anywhere by a
// preview.
// +kubebuilder:validation:XValidation:rule="has(self.targetEnvironment) != (has(self.allEnvironments) && self.allEnvironments)",message="exactly one of targetEnvironment and allEnvironments: true",reason=FieldValueForbidden
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
	// the preview, the promotion would deploy to; unset with allEnvironments.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as Environment names are)",reason=FieldValueForbidden
	// +optional
	TargetEnvironment string `json:"targetEnvironment,omitempty"`

	// AllEnvironments previews the Snapshot into every Environment of the
	// namespace's path at once (from the roots down through their children,
	// as a release moves): status.environments has each one's result.
	// +optional
	AllEnvironments bool `json:"allEnvironments,omitempty"`
}

// Previewed are the Environments spec asks about: allEnvironments gets the
// path of envs (one namespace's), roots first, each parent before its
// children; otherwise targetEnvironment alone.
func (s PromotionPreviewSpec) Previewed(envs []Environment) []string {
	if !s.AllEnvironments {
		return []string{s.TargetEnvironment}
	}
	var out []string
	for _, step := range NewEnvironmentGraph(envs).DepthFirst() {
		out = append(out, step.Name)
	}
	return out
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
	// RenderHash is "sha256:" and the hex SHA-256 of the manifests Argo CD
	// renders for the component (canonical JSON, in group/kind/namespace/name
	// order): a promotion into an Environment that requires a preview applies
	// only while it renders the same.
	// +optional
	RenderHash string `json:"renderHash,omitempty"`
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
	// Environments are the result in each Environment of the path, in its
	// order, with allEnvironments (then Components and Diff are empty, and
	// Clean says every Environment's is).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Environments []PreviewEnvironmentResult `json:"environments,omitempty"`
	// Conditions: Ready (kstatus) and PreviewFailed when the preview could
	// not run.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PreviewEnvironmentResult is what promoting the Snapshot to one
// Environment of a release preview would change there.
type PreviewEnvironmentResult struct {
	// Name is the Environment's.
	Name string `json:"name"`
	// Clean says every object of every component passed the dry-run there.
	Clean bool `json:"clean"`
	// Error says why the Environment could not be previewed (its inputs,
	// its cluster's credentials); then it has no components.
	// +optional
	Error string `json:"error,omitempty"`
	// Components summarizes each component there, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []PreviewComponentSummary `json:"components,omitempty"`
	// Diff is the unified diff there, cut to its share of 32 KiB.
	// +optional
	Diff string `json:"diff,omitempty"`
	// DiffTruncated says Diff was cut.
	// +optional
	DiffTruncated bool `json:"diffTruncated,omitempty"`
}

// PromotionPreview condition types and reasons.
const (
	// PromotionPreviewConditionFailed: the preview could not run (its inputs,
	// the repo-server, the target cluster).
	PromotionPreviewConditionFailed = "PreviewFailed"
	// PromotionPreviewReasonInvalid: an input is missing or not the tenant's.
	PromotionPreviewReasonInvalid = "InvalidInput"
	// WaitingReasonPreviewOutdated: a promotion waits because a component
	// no longer renders what the preview recorded (its renderHash), or
	// cannot be rendered to be compared: preview again.
	WaitingReasonPreviewOutdated = "PreviewOutdated"
)

// PromotionPreview shows what promoting a Snapshot to an Environment would
// change there, without changing anything.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=preview;pp,categories=gitops
// +kubebuilder:printcolumn:name="Snapshot",type=string,JSONPath=`.spec.snapshot`
// +kubebuilder:printcolumn:name="Environment",type=string,JSONPath=`.spec.targetEnvironment`
// +kubebuilder:printcolumn:name="All",type=boolean,JSONPath=`.spec.allEnvironments`
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
	// PromotionPreview of the same Snapshot for it (targetEnvironment, or
	// allEnvironments with a clean result there) completed clean (no
	// dry-run error) at most this long ago, e.g. "15m", and, where the
	// sidecar renders (a repo-server), only while every component renders
	// what the preview recorded (its renderHash).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +required
	RequiredWithin metav1.Duration `json:"requiredWithin"`
}

func init() {
	SchemeBuilder.Register(&PromotionPreview{}, &PromotionPreviewList{})
}
