/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

// Package v1alpha1 contains the App Studio Environment API types of the
// appstudio.redhat.com/v1alpha1 group: Environment, Snapshot,
// SnapshotEnvironmentBinding, PromotionRun, DeploymentTarget,
// DeploymentTargetClaim and DeploymentTargetClass, plus the minimal
// Application and Component types those APIs refer to.
//
// The JSON field names follow the public App Studio API (application-api), so
// that existing manifests and clients keep working unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=appstudio.redhat.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "appstudio.redhat.com", Version: "v1alpha1"}

	// SchemeBuilder collects the types of this package for registration in a
	// runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
