package promotionrun

import (
	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonPreviewRequired: the run waits for a clean PromotionPreview an
// Environment it is about to enter asks for (spec.preview.requiredWithin).
const ReasonPreviewRequired = as.WaitingReasonPreviewRequired

// previewGate is the preview rung as the ladder applies it (gate): a
// rollback passes it (policy.holds).
func previewGate(in gateInput) *kernel.Waiting { return previewRung.holds(in) }

// previewRung: previews never hold a rollback. A rollback returns to a
// Snapshot that ran in the Environment before, chosen only once it starts
// (its spec names the Snapshot rolled back, of which a preview says nothing).
var previewRung = policy{previewed, never}

// previewed says whether the promotion may enter in.Env: when in.Env
// requires a preview, one of the same Snapshot and Application for in.Env
// must have completed for its current spec, without a render or dry-run
// error, at most requiredWithin before now; otherwise the promotion waits
// (reason PreviewRequired). A preview that ran into errors does not count:
// another one must run clean. A completed preview wakes the run (setup.go).
func previewed(in gateInput) *kernel.Waiting {
	if in.Env.Spec.Preview == nil {
		return nil
	}
	within := in.Env.Spec.Preview.RequiredWithin.Duration
	for _, p := range in.Previews {
		if p.Namespace != in.Env.Namespace || p.Spec.Snapshot != in.Snapshot || p.Spec.Application != in.Application || p.Spec.TargetEnvironment != in.Env.Name {
			continue
		}
		s := p.Status
		if s.CompletedAt == nil || s.ObservedGeneration != p.Generation || !s.Clean || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if age := in.Now.Sub(s.CompletedAt.Time); age >= 0 && age <= within {
			return nil
		}
	}
	return kernel.Wait(ReasonPreviewRequired, kernel.WaitingRetry,
		"a clean PromotionPreview of Snapshot %s to Environment %s completed within %s (the Environment requires it)", in.Snapshot, in.Env.Name, within)
}

// previewCompleted says a preview just completed (a watch event that may let
// a run in).
func previewCompleted(p *as.PromotionPreview) bool {
	return p.Status.CompletedAt != nil && p.Status.ObservedGeneration == p.Generation
}
