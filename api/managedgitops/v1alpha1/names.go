package v1alpha1

// ApplicationNamePrefix + the GitOpsDeployment's UID is the name of its Argo
// CD Application, as in the original service; clients look Applications up by
// it. The rule lives here, with the type, so that clients share it without
// depending on Argo CD's types.
const ApplicationNamePrefix = "gitopsdepl-"

// ApplicationName is the name of the Argo CD Application of the
// GitOpsDeployment with this UID.
func ApplicationName(gitopsDeploymentUID string) string {
	return ApplicationNamePrefix + gitopsDeploymentUID
}
