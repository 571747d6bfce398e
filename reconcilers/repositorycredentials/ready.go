package repositorycredentials

import (
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of credentials handed to Argo CD: Ready once the repository
// accepted them, or once they are handed over when they cannot be checked
// here (ssh: Argo CD reports on the deployments); a failed check is the
// refusal firstRefusal returns, which SetReady makes False.
func readiness(v Verdict) kernel.Readiness {
	if v.Unverified != "" {
		return kernel.Done("NotVerified", "handed to Argo CD without a check: %s", v.Unverified)
	}
	return kernel.Done("Verified", "the repository accepted the credentials")
}
