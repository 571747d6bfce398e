package promotionrun

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonPreviewRequired: the run waits for a clean PromotionPreview its
// first Environment asks for (spec.preview.requiredWithin).
const ReasonPreviewRequired = "PreviewRequired"

// previewRequired reads what previewGate decides on: the run's first
// Environment and, when it asks for a preview, the previews of the run's
// namespace (read past the cache: the run does not watch them).
func (r *Reconciler) previewRequired(ctx context.Context, run *as.PromotionRun) error {
	env := &as.Environment{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: first(run)}, env)
	if apierrors.IsNotFound(err) {
		return nil // promote() refuses a missing Environment
	}
	if err != nil || env.Spec.Preview == nil {
		return err
	}
	var previews as.PromotionPreviewList
	if err := r.APIReader.List(ctx, &previews, client.InNamespace(run.Namespace)); err != nil {
		return err
	}
	return previewGate(run, env, previews.Items, r.now().Time)
}

// previewGate says whether run may start into env: when env requires a
// preview, one of the same Snapshot and Application for env must have
// completed for its current spec, without a render or dry-run error, at most
// requiredWithin before now; otherwise the run waits (kernel.Waiting,
// reason PreviewRequired). A preview that ran into errors does not count:
// another one must run clean.
func previewGate(run *as.PromotionRun, env *as.Environment, previews []as.PromotionPreview, now time.Time) error {
	if env.Spec.Preview == nil {
		return nil
	}
	within := env.Spec.Preview.RequiredWithin.Duration
	for _, p := range previews {
		if p.Spec.Snapshot != run.Spec.Snapshot || p.Spec.Application != run.Spec.Application || p.Spec.TargetEnvironment != env.Name {
			continue
		}
		s := p.Status
		if s.CompletedAt == nil || s.ObservedGeneration != p.Generation || !s.Clean || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if age := now.Sub(s.CompletedAt.Time); age >= 0 && age <= within {
			return nil
		}
	}
	return kernel.Wait(ReasonPreviewRequired, kernel.UnwatchedRecheck,
		"a clean PromotionPreview of Snapshot %s to Environment %s completed within %s (the Environment requires it)", run.Spec.Snapshot, env.Name, within)
}
