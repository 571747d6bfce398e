/*
Copyright 2026 The gitops-service authors.

Licensed under the Apache License, Version 2.0.
*/

package v1alpha1

// Condition types and reasons, annotations, finalizers and labels of the App
// Studio API. The string values are part of the public contract: clients of the
// original service match on them, so they must never change.
//
// The enumerations that are the values of a typed field (PromotionRunState,
// DeploymentTargetPhase, ReclaimPolicy, ...) live next to their type, in the
// file of the kind that uses them.

// SnapshotEnvironmentBinding: .status.bindingConditions.
const (
	// BindingConditionErrorOccurred is the only type of condition in
	// .status.bindingConditions: True when the SnapshotEnvironmentBinding
	// reconciler could not do its work, with one of the BindingReason* reasons.
	BindingConditionErrorOccurred = "ErrorOccurred"

	// BindingReasonErrorOccurred is a generic reconciliation error.
	BindingReasonErrorOccurred = "ErrorOccurred"
	// BindingReasonGitOpsRepoNotReady: a GitOps repository condition in
	// .status.gitopsRepoConditions reports that the repository is not ready.
	BindingReasonGitOpsRepoNotReady = "GitOpsRepoNotReady"
	// BindingReasonWaitingForComponentStatus: .status.components does not yet
	// hold the GitOps repository of every Component to deploy.
	BindingReasonWaitingForComponentStatus = "WaitingForComponentStatus"
	// BindingReasonDuplicateComponents: two entries of .spec.components or
	// .status.components have the same name.
	BindingReasonDuplicateComponents = "DuplicateComponents"
	// BindingReasonErrorGeneratingGitOpsDeployment: a GitOpsDeployment for a
	// Component could not be generated, created or updated.
	BindingReasonErrorGeneratingGitOpsDeployment = "ErrorGeneratingGitOpsDeployment"
)

// SnapshotEnvironmentBinding: .status.componentDeploymentConditions.
const (
	// ComponentDeploymentConditionAllComponentsDeployed is True when every
	// GitOpsDeployment of the binding is synced to the expected commit; its
	// message reads "N of M components deployed".
	ComponentDeploymentConditionAllComponentsDeployed = "AllComponentsDeployed"

	// ComponentDeploymentConditionCommitsSynced is the reason of a True
	// AllComponentsDeployed condition.
	ComponentDeploymentConditionCommitsSynced = "CommitsSynced"
	// ComponentDeploymentConditionCommitsUnsynced is the reason of a False
	// AllComponentsDeployed condition.
	ComponentDeploymentConditionCommitsUnsynced = "CommitsUnsynced"
	// ComponentDeploymentConditionErrorOccurred is the reason of an
	// AllComponentsDeployed condition whose state could not be computed.
	ComponentDeploymentConditionErrorOccurred = "ErrorOccurred"
)

// Environment: .status.conditions.
const (
	// EnvironmentConditionErrorOccurred is True when the Environment could not
	// be turned into a GitOpsDeploymentManagedEnvironment, with one of the
	// EnvironmentReason* reasons.
	EnvironmentConditionErrorOccurred = "ErrorOccurred"

	// EnvironmentReasonErrorOccurred is a generic reconciliation error.
	EnvironmentReasonErrorOccurred = "ErrorOccurred"
	// EnvironmentReasonDeploymentTargetClaimNotFound: the DeploymentTargetClaim
	// named by .spec.configuration.target.deploymentTargetClaim.claimName does
	// not exist.
	EnvironmentReasonDeploymentTargetClaimNotFound = "DeploymentTargetClaimNotFound"
	// EnvironmentReasonDeploymentTargetNotFound: the DeploymentTarget bound to
	// the claim does not exist.
	EnvironmentReasonDeploymentTargetNotFound = "DeploymentTargetNotFound"
	// EnvironmentReasonInvalidEnvironment: the Environment is invalid, e.g. it
	// sets both a DeploymentTargetClaim and kubernetesCredentials.
	EnvironmentReasonInvalidEnvironment = "InvalidEnvironment"
	// EnvironmentReasonSecretNotFound: the cluster credentials Secret does not
	// exist.
	EnvironmentReasonSecretNotFound = "SecretNotFound"
	// EnvironmentReasonInvalidSecretType: the cluster credentials Secret is
	// not of type managed-gitops.redhat.com/managed-environment.
	EnvironmentReasonInvalidSecretType = "InvalidSecretType"
	// EnvironmentReasonMissingKubeConfigField: the cluster credentials Secret
	// has no (or an empty) 'kubeconfig' key.
	EnvironmentReasonMissingKubeConfigField = "MissingKubeConfigField"
	// EnvironmentReasonUnsupportedAPIURL: kubernetesCredentials.apiURL is not
	// an https URL the GitOps Service accepts (same rules as the apiURL of a
	// GitOpsDeploymentManagedEnvironment).
	EnvironmentReasonUnsupportedAPIURL = "UnsupportedAPIURL"
	// EnvironmentReasonNameCollision: the GitOpsDeploymentManagedEnvironment
	// or Secret the Environment would be turned into exists and was not
	// created by the GitOps Service for this Environment; it is left alone.
	EnvironmentReasonNameCollision = "NameCollision"
	// EnvironmentReasonDeploymentTargetClaimNotSupported: the Environment
	// names a DeploymentTargetClaim, which this version of the GitOps Service
	// does not deploy to yet.
	EnvironmentReasonDeploymentTargetClaimNotSupported = "DeploymentTargetClaimNotSupported"
	// EnvironmentReasonDeploymentTargetClaimNotBound: the DeploymentTargetClaim
	// is not Bound yet; the Environment waits for it (status False, not an error).
	EnvironmentReasonDeploymentTargetClaimNotBound = "DeploymentTargetClaimNotBound"
	// EnvironmentReasonDeploymentTargetClaimLost: the DeploymentTargetClaim
	// lost its DeploymentTarget; what was deployed through it is left alone.
	EnvironmentReasonDeploymentTargetClaimLost = "DeploymentTargetClaimLost"
)

// DeploymentTargetClaim and DeploymentTarget: .status.conditions.
const (
	// DeploymentTargetConditionErrorOccurred is the one condition of claims and
	// targets: False with reason Success (or a Waiting* reason) when all is
	// well, True with one of the reasons below when the user must act.
	DeploymentTargetConditionErrorOccurred = "ErrorOccurred"

	// DeploymentTargetReasonSuccess: bound, or available, as asked.
	DeploymentTargetReasonSuccess = "Success"
	// DeploymentTargetReasonWaitingForTarget (claim, status False): the
	// DeploymentTarget named by targetName does not exist (yet).
	DeploymentTargetReasonWaitingForTarget = "WaitingForDeploymentTarget"
	// DeploymentTargetReasonWaitingForProvisioner (claim, status False): no
	// DeploymentTarget matches; the class's provisioner is making one, or is
	// not run by this GitOps Service (an external provisioner may).
	DeploymentTargetReasonWaitingForProvisioner = "WaitingForProvisioner"
	// DeploymentTargetReasonClaimedByAnother (claim): the DeploymentTarget
	// named by targetName is bound to another claim.
	DeploymentTargetReasonClaimedByAnother = "DeploymentTargetClaimedByAnotherClaim"
	// DeploymentTargetReasonMismatch (claim): the DeploymentTarget named by
	// targetName does not satisfy the claim (class, phase or credentials).
	DeploymentTargetReasonMismatch = "DeploymentTargetMismatch"
	// DeploymentTargetReasonClassNotFound (claim): the DeploymentTargetClass
	// does not exist.
	DeploymentTargetReasonClassNotFound = "DeploymentTargetClassNotFound"
	// DeploymentTargetReasonProvisioningFailed (claim): the provisioner
	// refused the claim, e.g. the class's parameters are invalid.
	DeploymentTargetReasonProvisioningFailed = "ProvisioningFailed"
	// DeploymentTargetReasonClassNotPermitted (claim): the class's
	// provisioner serves only tenant namespaces its admin selected, and the
	// claim's is not one of them.
	DeploymentTargetReasonClassNotPermitted = "DeploymentTargetClassNotPermitted"
	// DeploymentTargetReasonClaimLimitReached (claim): the tenant namespace
	// has as many targets of the class as the class allows.
	DeploymentTargetReasonClaimLimitReached = "ClaimLimitReached"
	// DeploymentTargetReasonLost (claim): the bound DeploymentTarget was deleted.
	DeploymentTargetReasonLost = "DeploymentTargetLost"
	// DeploymentTargetReasonReleaseFailed (target): freeing the external
	// resources of a deleted DeploymentTarget keeps failing; phase Failed.
	DeploymentTargetReasonReleaseFailed = "ReleaseFailed"
)

// PromotionRun: .status.conditions.
const (
	// PromotionRunConditionErrorOccurred is True when the PromotionRun
	// reconciler could not do its work.
	PromotionRunConditionErrorOccurred = "ErrorOccurred"

	// PromotionRunReasonErrorOccurred is a generic reconciliation error.
	PromotionRunReasonErrorOccurred = "ErrorOccurred"
)

// Annotations of DeploymentTargets and DeploymentTargetClaims (ADR-8).
const (
	// AnnTargetProvisioner is set on a DeploymentTargetClaim by the binding
	// controller: a DeploymentTarget should be dynamically provisioned for the
	// claim by the provisioner named in the value.
	AnnTargetProvisioner = "provisioner.appstudio.redhat.com/dt-provisioner"

	// AnnBindCompleted is set on a DeploymentTargetClaim by the binding
	// controller once it completed the binding process. Value: AnnBinderValueTrue.
	AnnBindCompleted = "dt.appstudio.redhat.com/bind-complete"

	// AnnBoundByController is set on a DeploymentTargetClaim by the binding
	// controller when the controller (not the user) bound the claim to a
	// DeploymentTarget, i.e. set .spec.targetName. Value: AnnBinderValueTrue.
	// The binder also sets it on a DeploymentTarget whose claimRef it wrote
	// (as on PersistentVolumes), so a reservation for a claim that went
	// before its binding was written is told from a user's pre-binding.
	AnnBoundByController = "dt.appstudio.redhat.com/bound-by-controller"

	// AnnDynamicallyProvisioned is set on a DeploymentTarget by the provisioner
	// that provisioned it; the value is the provisioner's name, which matches
	// the .spec.provisioner of a DeploymentTargetClass.
	AnnDynamicallyProvisioned = "provisioner.appstudio.redhat.com/provisioned-by"

	// AnnBinderValueTrue is the value of AnnBindCompleted and
	// AnnBoundByController.
	AnnBinderValueTrue = "true"
)

// Finalizers.
const (
	// FinalizerBinder is put on DeploymentTargetClaims by the binding
	// controller, so that it can release or delete the bound DeploymentTarget.
	FinalizerBinder = "binder.appstudio.redhat.com/finalizer"

	// FinalizerDT is put on DeploymentTargets, so that a bound target is not
	// removed before its claim has been updated.
	FinalizerDT = "dt.appstudio.redhat.com/finalizer"

	// FinalizerProvisioner is put on dynamically provisioned DeploymentTargets
	// by their provisioner, which frees the external resources (e.g. a
	// SpaceRequest) before the finalizer is removed.
	FinalizerProvisioner = "provisioner.appstudio.redhat.com/finalizer"
)

// Labels.
const (
	// LabelApplication names the Application a resource belongs to; put on
	// the GitOpsDeployments generated for a SnapshotEnvironmentBinding.
	LabelApplication = "appstudio.openshift.io/application"

	// LabelComponent names the Component a generated GitOpsDeployment deploys.
	LabelComponent = "appstudio.openshift.io/component"

	// LabelEnvironment names the Environment a generated GitOpsDeployment
	// deploys to.
	LabelEnvironment = "appstudio.openshift.io/environment"

	// LabelDTC names the DeploymentTargetClaim a provisioned resource (e.g. a
	// SpaceRequest) was created for.
	LabelDTC = "appstudio.openshift.io/dtc"

	// LabelDT names the DeploymentTarget a provisioned resource (e.g. a
	// SpaceRequest) backs.
	LabelDT = "appstudio.openshift.io/dt"
)
