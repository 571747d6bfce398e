// Package v1alpha1 holds the core GitOps Service API: GitOpsDeployment,
// GitOpsDeploymentSyncRun, GitOpsDeploymentRepositoryCredentials and
// GitOpsDeploymentManagedEnvironment.
// +kubebuilder:object:generate=true
// +groupName=managed-gitops.redhat.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "managed-gitops.redhat.com", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this group to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
