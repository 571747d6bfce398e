package gitopsdeployment

import (
	"strings"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of a deployment whose pass ended without a refusal: Ready once
// Argo CD reports the Application Synced and Healthy with no error condition
// (what a user waiting for a deployment waits for); False while Argo CD
// reports an error (SyncError, ComparisonError, ...) or Degraded; else in
// progress. Argo CD's warnings (…Warning) do not decide. A manual
// deployment is Ready once Healthy whatever its sync status: OutOfSync is its
// steady state until a SyncRun syncs it.
func readiness(applied, manual bool, st v1.GitOpsDeploymentStatus) kernel.Readiness {
	if !applied {
		return kernel.Progressing("the Argo CD Application is not created yet")
	}
	for _, c := range st.Conditions {
		if c.Status == v1.GitOpsConditionStatusTrue && c.Type != v1.GitOpsDeploymentConditionErrorOccurred && strings.HasSuffix(string(c.Type), "Error") {
			return kernel.Failed(string(c.Type), "%s", c.Message)
		}
	}
	sync, health := st.Sync.Status, st.Health.Status
	switch {
	case sync == v1.SyncStatusCodeSynced && health == v1.HealthStatusHealthy:
		return kernel.Done("SyncedAndHealthy", "the Application is Synced and Healthy")
	case manual && health == v1.HealthStatusHealthy:
		return kernel.Done(string(v1.HealthStatusHealthy), "the Application is Healthy, sync status %s (manual: a GitOpsDeploymentSyncRun syncs it)", orUnknown(string(sync)))
	case health == v1.HealthStatusDegraded:
		return kernel.Failed(string(v1.HealthStatusDegraded), "sync status %s, health Degraded: %s", orUnknown(string(sync)), st.Health.Message)
	}
	return kernel.Progressing("sync status %s, health %s", orUnknown(string(sync)), orUnknown(string(health)))
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
