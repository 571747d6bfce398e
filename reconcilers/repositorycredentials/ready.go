package repositorycredentials

import (
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// readiness of credentials handed to Argo CD: Ready once the repository
// accepted them; a failed check is the refusal firstRefusal returns, which
// SetReady makes False.
func readiness(Verdict) kernel.Readiness {
	return kernel.Done("Verified", "the repository accepted the credentials")
}
