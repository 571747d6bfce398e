package v1alpha1

// Finished says whether the run's sync is over: it succeeded, failed or ended
// in an error. The reconciler stops following a finished run, and a later
// run of the same deployment no longer waits for it.
func (s *GitOpsDeploymentSyncRunStatus) Finished() bool {
	switch s.Phase {
	case OperationSucceeded, OperationFailed, OperationError:
		return true
	}
	return false
}

// Refused says whether the run was refused before its sync started (its
// ErrorOccurred condition says why). A refusal may still be lifted, e.g. when
// the deployment appears, so the run is not Finished; a client that follows
// the run stops here.
func (s *GitOpsDeploymentSyncRunStatus) Refused() bool {
	if s.StartedAt != nil {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == GitOpsDeploymentConditionErrorOccurred && c.Status == GitOpsConditionStatusTrue {
			return true
		}
	}
	return false
}
