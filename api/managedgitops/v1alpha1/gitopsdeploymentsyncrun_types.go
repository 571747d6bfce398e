package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// GitOpsDeploymentSyncRunSpec names the manual GitOpsDeployment to sync and,
// optionally, the revision. It is immutable.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type GitOpsDeploymentSyncRunSpec struct {
	// GitopsDeploymentName is the GitOpsDeployment (same namespace) to sync.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	GitopsDeploymentName string `json:"gitopsDeploymentName"`
	// RevisionID is the Git revision to deploy; empty means the deployment's targetRevision.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('-') && !self.contains('..') && !self.matches(r'[\x00-\x20\p{Cc}\x{2028}\x{2029}]')`,message="a revision must not start with '-' nor contain '..', blanks or control characters",reason=FieldValueForbidden
	RevisionID string `json:"revisionId,omitempty"`
}

// GitOpsDeploymentSyncRunStatus is the observed state of a sync run.
type GitOpsDeploymentSyncRunStatus struct {
	// +optional
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty"`
	// Health of the deployment when the sync finished.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`
	// SyncStatus of the deployment when the sync finished.
	// +optional
	SyncStatus SyncStatusCode `json:"syncStatus,omitempty"`
	// Phase of the sync operation this run started (Running, Succeeded, Failed, Error, Terminating).
	// +optional
	Phase OperationPhase `json:"phase,omitempty"`
	// Revision the sync deployed.
	// +optional
	Revision string `json:"revision,omitempty"`
	// StartedAt is when the sync operation was requested; a run with it set is never started again.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// ObservedGeneration is the spec generation the sidecar last acted on
	// (kstatus: a Ready condition is current only when this equals
	// metadata.generation).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=syncrun;gitopsdeplsyncrun,categories=gitops
// +kubebuilder:printcolumn:name="Deployment",type=string,JSONPath=`.spec.gitopsDeploymentName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Sync Status",type=string,JSONPath=`.status.syncStatus`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitOpsDeploymentSyncRun triggers one sync of a manual GitOpsDeployment.
type GitOpsDeploymentSyncRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsDeploymentSyncRunSpec   `json:"spec,omitempty"`
	Status GitOpsDeploymentSyncRunStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GitOpsDeploymentSyncRunList is a list of GitOpsDeploymentSyncRuns.
type GitOpsDeploymentSyncRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeploymentSyncRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeploymentSyncRun{}, &GitOpsDeploymentSyncRunList{})
}
