package syncrun

import (
	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a run whose pass ended without a refusal or a wait: Ready
// when its sync succeeded, False when it failed (a finished run is never
// looked at again), else in progress.
func readiness(st v1.GitOpsDeploymentSyncRunStatus) kernel.Readiness {
	switch st.Phase {
	case v1.OperationSucceeded:
		return kernel.Done("SyncSucceeded", "%s", MsgSucceeded)
	case v1.OperationFailed, v1.OperationError:
		return kernel.Failed("SyncFailed", "%s", kernel.ErrorMessage(st.Conditions))
	case "":
		return kernel.Progressing("the sync has not started")
	}
	return kernel.Progressing("the sync is %s", st.Phase)
}

// needsReady says whether a finished run lacks its Ready condition (it
// finished before the sidecar set one).
func needsReady(run *v1.GitOpsDeploymentSyncRun) bool {
	if !run.Status.Finished() {
		return false
	}
	for _, c := range run.Status.Conditions {
		if c.Type == kernel.ConditionReady {
			return false
		}
	}
	return true
}
