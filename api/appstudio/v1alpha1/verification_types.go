/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// ImageVerification is what was found when one image of a Snapshot was
// checked against an Environment's signature and provenance requirements
// before a promotion entered it. The promotion's gates hold on a failed
// one; the promotion policies (CEL) see every result as a fact; the
// PromotionHistory records what was verified.
type ImageVerification struct {
	// Component of the Snapshot the image belongs to.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Component string `json:"component"`

	// Image as the Snapshot names it.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// Digest the image resolved to (sha256:...) when it was checked; what
	// was verified is this digest, not a tag.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Digest string `json:"digest,omitempty"`

	// Verified is true when every requirement of the Environment holds for
	// the image.
	// +required
	Verified bool `json:"verified"`

	// Signers are the keys or identities whose signatures verified
	// (a key's name, or issuer and subject of a keyless certificate).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	Signers []string `json:"signers,omitempty"`

	// Attestations are the predicate types of the attestations that
	// verified (e.g. https://slsa.dev/provenance/v1).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	Attestations []string `json:"attestations,omitempty"`

	// Message says what was expected and not found when Verified is false.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}
