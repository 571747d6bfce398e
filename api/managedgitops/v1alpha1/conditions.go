package v1alpha1

// Condition types, reasons and names that clients of the original service rely on.
const (
	// GitOpsDeploymentConditionErrorOccurred is True while the sidecar cannot reconcile the CR.
	GitOpsDeploymentConditionErrorOccurred GitOpsConditionType = "ErrorOccurred"
	// GitOpsDeploymentConditionSyncError mirrors the Argo CD Application's SyncError.
	GitOpsDeploymentConditionSyncError GitOpsConditionType = "SyncError"
	// GitOpsDeploymentConditionComparisonError mirrors the Argo CD Application's ComparisonError.
	GitOpsDeploymentConditionComparisonError GitOpsConditionType = "ComparisonError"

	GitOpsDeploymentReasonErrorOccurred GitOpsConditionReason = "ErrorOccurred"
	// ResolvedSuffix is appended to a condition's type when it becomes False.
	ResolvedSuffix = "Resolved"

	// FinalizerResourcesFinalizer makes deletion wait until the deployed resources are gone.
	FinalizerResourcesFinalizer = "resources-finalizer.managed-gitops.redhat.com"
)

// Messages of the original service.
const (
	ErrMsgPathEmpty            = "spec.source.path is a required field and it cannot be empty"
	ErrMsgPathRoot             = "spec.source.path cannot be '/'"
	ErrMsgTypeInvalid          = "spec type must be manual or automated"
	ErrMsgEnvironmentNeeded    = "the environment field should not be empty when the namespace is non-empty"
	ErrMsgManagedEnvUnresolved = "Unable to reconcile the ManagedEnvironment. Verify that the ManagedEnvironment and Secret are correctly defined, and have valid credentials"
)

// ManagedEnvironment condition type and reasons.
const (
	ManagedEnvironmentConditionConnectionInitializationSucceeded = "ConnectionInitializationSucceeded"

	ManagedEnvironmentReasonSucceeded                          = "Succeeded"
	ManagedEnvironmentReasonUnsupportedAPIURL                  = "UnsupportedAPIURL"
	ManagedEnvironmentReasonSecretNotFound                     = "SecretNotFound"
	ManagedEnvironmentReasonInvalidSecretType                  = "InvalidSecretType"
	ManagedEnvironmentReasonMissingKubeConfigField             = "MissingKubeConfigField"
	ManagedEnvironmentReasonUnableToParseKubeconfigData        = "UnableToParseKubeconfigData"
	ManagedEnvironmentReasonUnableToLocateContext              = "UnableToLocateContext"
	ManagedEnvironmentReasonUnsupportedCredentials             = "UnsupportedCredentials"
	ManagedEnvironmentReasonUnableToInstallServiceAccount      = "UnableToInstallServiceAccount"
	ManagedEnvironmentReasonUnableToValidateClusterCredentials = "UnableToValidateClusterCredentials"
	ManagedEnvironmentReasonInvalidNamespaceList               = "InvalidNamespaceList"
	// ManagedEnvironmentReasonClusterSecretNameCollision: the Argo CD cluster
	// Secret's name is taken by an object the GitOps Service did not create.
	ManagedEnvironmentReasonClusterSecretNameCollision = "ClusterSecretNameCollision"

	// FinalizerManagedEnvironment keeps a ManagedEnvironment until its Argo CD
	// cluster Secret and, with createNewServiceAccount, the ServiceAccount and
	// roles on the target cluster are removed.
	FinalizerManagedEnvironment = "managed-gitops.redhat.com/managed-environment"
)

// RepositoryCredentials condition types and reasons.
const (
	RepositoryCredentialConditionErrorOccurred      = "ErrorOccurred"
	RepositoryCredentialConditionValidRepositoryURL = "ValidRepositoryUrl"
	RepositoryCredentialConditionValidCredential    = "ValidRepositoryCredential"

	RepositoryCredentialReasonSecretNotSpecified           = "SecretNotSpecified"
	RepositoryCredentialReasonSecretNotFound               = "SecretNotFound"
	RepositoryCredentialReasonSecretInvalidType            = "SecretInvalidType"
	RepositoryCredentialReasonInvalidRepositoryURL         = "InvalidRepositoryUrl"
	RepositoryCredentialReasonInvalidCredentials           = "InvalidCredentials"
	RepositoryCredentialReasonValidRepositoryURL           = "ValidRepositoryUrl"
	RepositoryCredentialReasonRepositoryCredentialUpToDate = "RepositoryCredentialUpToDate"
	// RepositoryCredentialReasonNotChecked: an earlier problem left this
	// condition unchecked.
	RepositoryCredentialReasonNotChecked = "NotChecked"
	// RepositoryCredentialReasonDuplicate: an older GitOpsDeploymentRepositoryCredentials
	// of the namespace already gives credentials for the same repository.
	RepositoryCredentialReasonDuplicate = "DuplicateRepositoryCredentials"
	// RepositoryCredentialReasonSecretNameCollision: the Argo CD repository
	// Secret's name is taken by an object the GitOps Service did not create.
	RepositoryCredentialReasonSecretNameCollision = "RepositorySecretNameCollision"

	// FinalizerRepositoryCredentials keeps a GitOpsDeploymentRepositoryCredentials
	// until its Argo CD repository Secret is deleted.
	FinalizerRepositoryCredentials = "managed-gitops.redhat.com/repository-credentials"

	// RepositoryCredentialSecretType is the type of the Secret a RepositoryCredentials references.
	RepositoryCredentialSecretType = "managed-gitops.redhat.com/repository-credential"
)

// SyncRun messages of the original service.
const (
	ErrMsgSyncRunAutomatedFmt  = "invalid GitOpsDeploymentSyncRun '%s'. Syncing a GitOpsDeployment with Automated sync policy is not allowed"
	ErrMsgSyncRunDeploymentFmt = "Unable to retrieve GitOpsDeployment '%s' referenced by the GitOpsDeploymentSyncRun"
)
