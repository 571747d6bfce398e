/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RunningDigest is the image digest a component's live containers were
// seen running in a step's Environment: the Snapshot's own when its image
// pins one (image@sha256:...), else the one all the component's running
// containers agreed on at the first observation after the step started.
// From then on, a container of the component running another digest is
// drift and fails the step (also during the Environment's soak time).
type RunningDigest struct {
	// Component of the Snapshot.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Component string `json:"component"`

	// Image as the Snapshot names it.
	// +required
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// Digest the component's running containers run (sha256:...).
	// +required
	// +kubebuilder:validation:MaxLength=128
	Digest string `json:"digest"`

	// ObservedTime is when the digest was first seen running after the step started.
	// +required
	ObservedTime metav1.Time `json:"observedTime"`
}
