package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitOpsDeploymentSpecType is the sync behaviour of a GitOpsDeployment.
// +kubebuilder:validation:Enum=automated;manual
type GitOpsDeploymentSpecType string

const (
	// GitOpsDeploymentSpecTypeAutomated deploys every change of the repository as Argo CD sees it.
	GitOpsDeploymentSpecTypeAutomated GitOpsDeploymentSpecType = "automated"
	// GitOpsDeploymentSpecTypeManual deploys only when a GitOpsDeploymentSyncRun asks for it.
	GitOpsDeploymentSpecTypeManual GitOpsDeploymentSpecType = "manual"
)

// GitOpsDeploymentSpec defines the desired state of a GitOpsDeployment.
type GitOpsDeploymentSpec struct {
	// Source is the GitOps repository to deploy from.
	// +required
	Source ApplicationSource `json:"source"`

	// Destination is the cluster (through a GitOpsDeploymentManagedEnvironment) and
	// namespace to deploy to. Empty means the GitOpsDeployment's own namespace on the
	// local cluster.
	// +optional
	Destination ApplicationDestination `json:"destination,omitempty"`

	// Type is the sync behaviour: automated (every change of the repository is deployed)
	// or manual (deployed only by a GitOpsDeploymentSyncRun).
	// +required
	Type GitOpsDeploymentSpecType `json:"type"`

	// SyncPolicy controls how Argo CD synchronizes.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`
}

// ApplicationSource is a path inside a Git repository at a revision.
type ApplicationSource struct {
	// RepoURL is the URL of the Git repository holding the Kubernetes resources.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('-') && !self.matches(r'[\s\p{Cc}\x{2028}\x{2029}]')`,message="repoURL must not start with '-' nor contain blanks or control characters",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`self.matches(r'^(?i:https?|ssh|git)://([^/?#]*@)?[^/?#@:][^/?#@]*([/?#]|$)') || self.matches(r'^(?i:file):') || (!self.contains('://') && self.matches(r'^[A-Za-z0-9][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:[^:\s]+$'))`,message="repoURL must be an https://, ssh://, http:// or git:// URL with a host, or git@host:path (file:// only where the platform allows it)",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[^:]*://[^/?#@]*:[^/?#@]*@')`,message="repoURL must not contain a password: use a GitOpsDeploymentRepositoryCredentials",reason=FieldValueForbidden
	RepoURL string `json:"repoURL"`

	// Path is the directory inside the repository to deploy from.
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('/') && !self.matches(r'(^|/)\.\.(/|$)')`,message="path must be relative and stay inside the repository (no leading '/', no '..' segments)",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\p{Cc}\x{2028}\x{2029}]')`,message="path must not contain control or line-break characters",reason=FieldValueForbidden
	Path string `json:"path"`

	// TargetRevision is the branch, tag or commit to deploy; empty means HEAD.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule=`!self.startsWith('-') && !self.contains('..') && !self.matches(r'[\x00-\x20\p{Cc}\x{2028}\x{2029}]')`,message="a revision must not start with '-' nor contain '..', blanks or control characters",reason=FieldValueForbidden
	TargetRevision string `json:"targetRevision,omitempty"`
}

// ApplicationDestination says where the resources are deployed.
type ApplicationDestination struct {
	// Environment is the name of a GitOpsDeploymentManagedEnvironment in the same
	// namespace holding the credentials of the target cluster.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 253",message="must be at most 253 characters (the longest name of a Kubernetes object)",reason=FieldValueForbidden
	Environment string `json:"environment,omitempty"`

	// Namespace is the target namespace for resources that do not set their own.
	// Defaults to the GitOpsDeployment's namespace.
	// +optional
	// +kubebuilder:validation:XValidation:rule="size(self) <= 63",message="must be at most 63 characters (a DNS label, as namespace and Environment names are)",reason=FieldValueForbidden
	Namespace string `json:"namespace,omitempty"`
}

// SyncOption is one Argo CD sync option, e.g. CreateNamespace=true.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:XValidation:rule=`self == 'CreateNamespace=true' || self == 'CreateNamespace=false'`,message="the only supported sync options are CreateNamespace=true and CreateNamespace=false",reason=FieldValueForbidden
type SyncOption string

// SyncOptionCreateNamespaceTrue asks Argo CD to create the destination namespace.
const (
	SyncOptionCreateNamespaceTrue  SyncOption = "CreateNamespace=true"
	SyncOptionCreateNamespaceFalse SyncOption = "CreateNamespace=false"
)

// SyncPolicy controls how Argo CD performs sync operations.
type SyncPolicy struct {
	// SyncOptions are passed to Argo CD. Supported: CreateNamespace=true|false.
	// +optional
	SyncOptions []SyncOption `json:"syncOptions,omitempty"`
}

// SyncStatusCode is Argo CD's comparison result.
type SyncStatusCode string

// Sync status values, as Argo CD reports them.
const (
	SyncStatusCodeUnknown   SyncStatusCode = "Unknown"
	SyncStatusCodeSynced    SyncStatusCode = "Synced"
	SyncStatusCodeOutOfSync SyncStatusCode = "OutOfSync"
)

// HealthStatusCode is Argo CD's health assessment.
type HealthStatusCode string

// Health status values, as Argo CD reports them.
const (
	HealthStatusUnknown     HealthStatusCode = "Unknown"
	HealthStatusProgressing HealthStatusCode = "Progressing"
	HealthStatusHealthy     HealthStatusCode = "Healthy"
	HealthStatusSuspended   HealthStatusCode = "Suspended"
	HealthStatusDegraded    HealthStatusCode = "Degraded"
	HealthStatusMissing     HealthStatusCode = "Missing"
)

// SyncStatus says whether the live state matches the target state in Git.
type SyncStatus struct {
	// Status is Synced, OutOfSync or Unknown.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`
	// Revision is the Git commit the comparison was made against.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// HealthStatus is the health of the deployment or one of its resources.
type HealthStatus struct {
	// Status is Healthy, Progressing, Degraded, Suspended, Missing or Unknown.
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`
	// Message explains the health status.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceStatus is one resource deployed by the GitOpsDeployment.
type ResourceStatus struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Status is the resource's sync status.
	Status SyncStatusCode `json:"status,omitempty"`
	// Health is the resource's health.
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
}

// ReconciledState is the part of the spec that Argo CD last reconciled.
type ReconciledState struct {
	Source      GitOpsDeploymentSource      `json:"source"`
	Destination GitOpsDeploymentDestination `json:"destination"`
}

// GitOpsDeploymentSource is the reconciled source.
type GitOpsDeploymentSource struct {
	RepoURL string `json:"repoURL"`
	Path    string `json:"path"`
	// Branch is the reconciled target revision.
	// +optional
	Branch string `json:"branch,omitempty"`
}

// GitOpsDeploymentDestination is the reconciled destination: Name is the
// GitOpsDeploymentManagedEnvironment (empty for the local cluster).
type GitOpsDeploymentDestination struct {
	// +optional
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace"`
}

// GitOpsConditionType is a condition type of GitOpsDeployment and GitOpsDeploymentSyncRun.
type GitOpsConditionType string

// GitOpsConditionStatus is True, False or Unknown.
type GitOpsConditionStatus string

// GitOpsConditionReason is a condition reason of GitOpsDeployment and GitOpsDeploymentSyncRun.
type GitOpsConditionReason string

// Condition status values.
const (
	GitOpsConditionStatusTrue    GitOpsConditionStatus = "True"
	GitOpsConditionStatusFalse   GitOpsConditionStatus = "False"
	GitOpsConditionStatusUnknown GitOpsConditionStatus = "Unknown"
)

// GitOpsDeploymentCondition is an observation of the GitOpsDeployment (or SyncRun).
// It keeps lastProbeTime, which the original API exposes, hence not metav1.Condition.
type GitOpsDeploymentCondition struct {
	// Type is ErrorOccurred, or an Argo CD Application condition type (SyncError, ComparisonError, ...).
	Type GitOpsConditionType `json:"type"`
	// Message is a human-readable message indicating details about the last transition.
	// +optional
	Message string `json:"message,omitempty"`
	// LastProbeTime is the last time the condition was observed.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is the last time the condition went from one status to another.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// Status is True, False or Unknown.
	Status GitOpsConditionStatus `json:"status"`
	// Reason is a unique, one-word, CamelCase reason for the condition's last transition.
	// +optional
	Reason GitOpsConditionReason `json:"reason,omitempty"`
}

// GitOpsDeploymentStatus is the observed state of a GitOpsDeployment.
type GitOpsDeploymentStatus struct {
	// Conditions: ErrorOccurred, and the Argo CD Application's conditions (SyncError, ComparisonError, ...).
	// +optional
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty"`
	// Sync is the comparison of the live state with Git.
	// +optional
	Sync SyncStatus `json:"sync,omitempty"`
	// Health is the health of the deployed resources.
	// +optional
	Health HealthStatus `json:"health,omitempty"`
	// Resources are the resources the deployment manages.
	// +optional
	Resources []ResourceStatus `json:"resources,omitempty"`
	// ReconciledState is the last spec Argo CD reconciled.
	// +optional
	ReconciledState ReconciledState `json:"reconciledState,omitempty"`
	// OperationState is the Argo CD Application's last or current operation.
	// +optional
	OperationState *OperationState `json:"operationState,omitempty"`
	// ObservedGeneration is the spec generation the sidecar last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitopsdepl,categories=gitops
// +kubebuilder:printcolumn:name="Sync Status",type=string,JSONPath=`.status.sync.status`
// +kubebuilder:printcolumn:name="Health Status",type=string,JSONPath=`.status.health.status`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.sync.revision`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// GitOpsDeployment is a continuous deployment from a GitOps repository to a
// namespace of a cluster, run by Argo CD.
type GitOpsDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitOpsDeploymentSpec   `json:"spec,omitempty"`
	Status GitOpsDeploymentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GitOpsDeploymentList is a list of GitOpsDeployments.
type GitOpsDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitOpsDeployment{}, &GitOpsDeploymentList{})
}
