package gitopsdeployment

// Reasons of a GitOpsDeployment's refusals: the Warning Event's reason, the
// Ready condition's (False) and gitops_service_warning_events_total's label.
// The ErrorOccurred condition keeps the seed's reason ErrorOccurred and the
// original service's messages; these say which failure it is (docs/reference.md, "Reasons of failures").
const (
	// ReasonInvalidSource: spec.source's path, repoURL or targetRevision.
	ReasonInvalidSource = "InvalidSource"
	// ReasonInvalidType: spec.type is neither automated nor manual.
	ReasonInvalidType = "InvalidType"
	// ReasonInvalidSyncPolicy: a sync option other than CreateNamespace.
	ReasonInvalidSyncPolicy = "InvalidSyncPolicy"
	// ReasonInvalidDestination: a local destination outside the tenant's namespace.
	ReasonInvalidDestination = "InvalidDestination"
	// ReasonManagedEnvironmentNotFound: spec.destination.environment names none.
	ReasonManagedEnvironmentNotFound = "ManagedEnvironmentNotFound"
	// ReasonManagedEnvironmentNotConnected: it exists but is not connected (its own condition says why).
	ReasonManagedEnvironmentNotConnected = "ManagedEnvironmentNotConnected"
	// ReasonAppProjectNotOurs: the tenant's AppProject name is taken by one we did not make.
	ReasonAppProjectNotOurs = "AppProjectNotOurs"
	// ReasonRepositoryNotReadable: the tenant can read spec.source.repoURL
	// neither anonymously nor with its own valid RepositoryCredentials.
	ReasonRepositoryNotReadable = "RepositoryNotReadable"
	// ReasonApplicationNameCollision: the Application's name is taken by one not made for this deployment.
	ReasonApplicationNameCollision = "ApplicationNameCollision"
)
