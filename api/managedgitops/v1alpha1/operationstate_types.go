package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The types below mirror the shape of Argo CD's Application operationState so that
// clients reading .status.operationState see the fields Argo CD documents, without
// our API depending on Argo CD's Go module.

// OperationPhase is the phase of an Argo CD operation.
type OperationPhase string

// Operation phases, as Argo CD reports them.
const (
	OperationRunning     OperationPhase = "Running"
	OperationTerminating OperationPhase = "Terminating"
	OperationFailed      OperationPhase = "Failed"
	OperationError       OperationPhase = "Error"
	OperationSucceeded   OperationPhase = "Succeeded"
)

// OperationState is the state of the Argo CD Application's current or last operation.
type OperationState struct {
	// Operation is the operation that was requested.
	Operation Operation `json:"operation"`
	// Phase is Running, Terminating, Failed, Error or Succeeded.
	Phase OperationPhase `json:"phase"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// SyncResult is the result of a sync operation.
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	// StartedAt is when the operation started.
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is when the operation finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// RetryCount is how many times the operation was retried.
	// +optional
	RetryCount int64 `json:"retryCount,omitempty"`
}

// Operation is a requested Argo CD operation.
type Operation struct {
	// +optional
	Sync *SyncOperation `json:"sync,omitempty"`
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	// +optional
	Info []Info `json:"info,omitempty"`
	// +optional
	Retry RetryStrategy `json:"retry,omitempty"`
}

// SyncOperation is a requested sync.
type SyncOperation struct {
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Prune bool `json:"prune,omitempty"`
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// +optional
	Resources []SyncOperationResource `json:"resources,omitempty"`
	// +optional
	SyncOptions []string `json:"syncOptions,omitempty"`
}

// SyncOperationResource names a resource to sync.
type SyncOperationResource struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// OperationInitiator says who started an operation.
type OperationInitiator struct {
	// +optional
	Username string `json:"username,omitempty"`
	// +optional
	Automated bool `json:"automated,omitempty"`
}

// Info is a name/value pair attached to an operation.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RetryStrategy says how a failed sync is retried.
type RetryStrategy struct {
	// Limit is the number of retries; -1 retries forever.
	// +optional
	Limit int64 `json:"limit,omitempty"`
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is the retry backoff.
type Backoff struct {
	// +optional
	Duration string `json:"duration,omitempty"`
	// +optional
	Factor *int64 `json:"factor,omitempty"`
	// +optional
	MaxDuration string `json:"maxDuration,omitempty"`
}

// SyncOperationResult is the result of a sync.
type SyncOperationResult struct {
	// +optional
	Resources []ResourceResult `json:"resources,omitempty"`
	Revision  string           `json:"revision"`
	// +optional
	Source ApplicationSource `json:"source,omitempty"`
}

// ResourceResult is the result of syncing one resource.
type ResourceResult struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	HookType string `json:"hookType,omitempty"`
	// +optional
	HookPhase string `json:"hookPhase,omitempty"`
	// +optional
	SyncPhase string `json:"syncPhase,omitempty"`
}
