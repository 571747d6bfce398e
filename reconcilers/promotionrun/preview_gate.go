package promotionrun

import (
	"context"
	"slices"
	"time"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// ReasonPreviewRequired: the run waits for a clean PromotionPreview an
// Environment it is about to enter asks for (spec.preview.requiredWithin).
const ReasonPreviewRequired = as.WaitingReasonPreviewRequired

// ReasonPreviewOutdated: the run waits because what it would apply is not
// what the clean preview rendered (a render hash differs): preview again.
const ReasonPreviewOutdated = as.WaitingReasonPreviewOutdated

// previewGate is the preview rung as the ladder applies it (gate): a
// rollback passes it (policy.holds).
func previewGate(in gateInput) *kernel.Waiting { return previewRung.holds(in) }

// previewRung: previews never hold a rollback. A rollback returns to a
// Snapshot that ran in the Environment before, chosen only once it starts
// (its spec names the Snapshot rolled back, of which a preview says nothing).
var previewRung = policy{previewed, never}

// previewed says whether the promotion may enter in.Env: when in.Env
// requires a preview, one of the same Snapshot and Application for in.Env
// (its targetEnvironment, or a release preview's result there) must have
// completed for its current spec, without a render or dry-run error, at
// most requiredWithin before now; otherwise the promotion waits (reason
// PreviewRequired). A preview that ran into errors does not count: another
// one must run clean. Where the sidecar renders (in.Rendered), every
// component must render now what such a preview recorded (renderHash);
// otherwise it waits (PreviewOutdated) for a new preview. A completed
// preview wakes the run (setup.go).
func previewed(in gateInput) *kernel.Waiting {
	if in.Env.Spec.Preview == nil {
		return nil
	}
	within := in.Env.Spec.Preview.RequiredWithin.Duration
	fresh := freshPreviews(in.Previews, in.Env, in.Application, in.Snapshot, in.Now, within)
	if len(fresh) == 0 {
		return kernel.Wait(ReasonPreviewRequired, kernel.WaitingRetry,
			"a clean PromotionPreview of Snapshot %s to Environment %s completed within %s (the Environment requires it)", in.Snapshot, in.Env.Name, within)
	}
	if in.Rendered == nil {
		return nil
	}
	if in.Rendered.Problem != "" {
		return kernel.Wait(ReasonPreviewOutdated, kernel.WaitingRetry,
			"Snapshot %s to be rendered for Environment %s to compare with its preview: %s", in.Snapshot, in.Env.Name, in.Rendered.Problem)
	}
	var changed string
	for _, components := range fresh {
		c := renderChanged(components, in.Rendered.Hashes)
		if c == "" {
			return nil
		}
		changed = c
	}
	return kernel.Wait(ReasonPreviewOutdated, kernel.WaitingRetry,
		"a new preview of Snapshot %s to Environment %s: component %s renders differently than when it was previewed (the source or the Environment's parameters changed since); create or update a PromotionPreview to preview it again", in.Snapshot, in.Env.Name, changed)
}

// Rendered is what a promotion into an Environment renders now: each
// component's render hash, by name, or why it could not be rendered.
type Rendered struct {
	Hashes  map[string]string
	Problem string
}

// freshPreviews are the component summaries of every preview that lets a
// promotion of snapshot into env in: of the same Snapshot and Application,
// completed clean for its current spec at most within before now (a
// release preview's when its result in env is clean), newest first.
func freshPreviews(previews []as.PromotionPreview, env *as.Environment, application, snapshot string, now time.Time, within time.Duration) [][]as.PreviewComponentSummary {
	type found struct {
		at         time.Time
		components []as.PreviewComponentSummary
	}
	var out []found
	for _, p := range previews {
		if p.Namespace != env.Namespace || p.Spec.Snapshot != snapshot || p.Spec.Application != application {
			continue
		}
		s := p.Status
		if s.CompletedAt == nil || s.ObservedGeneration != p.Generation || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if age := now.Sub(s.CompletedAt.Time); age < 0 || age > within {
			continue
		}
		switch {
		case p.Spec.AllEnvironments:
			i := slices.IndexFunc(s.Environments, func(e as.PreviewEnvironmentResult) bool { return e.Name == env.Name })
			if i >= 0 && s.Environments[i].Clean && s.Environments[i].Error == "" {
				out = append(out, found{s.CompletedAt.Time, s.Environments[i].Components})
			}
		case p.Spec.TargetEnvironment == env.Name && s.Clean:
			out = append(out, found{s.CompletedAt.Time, s.Components})
		}
	}
	slices.SortStableFunc(out, func(a, b found) int { return b.at.Compare(a.at) })
	components := make([][]as.PreviewComponentSummary, 0, len(out))
	for _, f := range out {
		components = append(components, f.components)
	}
	return components
}

// renderChanged is the first component (by name) whose render hash now
// differs from the previewed one, or that one of them lacks; "" when every
// component renders as previewed.
func renderChanged(previewed []as.PreviewComponentSummary, now map[string]string) string {
	names := make([]string, 0, len(now)+len(previewed))
	for name := range now {
		names = append(names, name)
	}
	for _, c := range previewed {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		i := slices.IndexFunc(previewed, func(c as.PreviewComponentSummary) bool { return c.Name == name })
		if i < 0 || previewed[i].RenderHash == "" || previewed[i].RenderHash != now[name] {
			return name
		}
	}
	return ""
}

// previewCompleted says a preview just completed (a watch event that may let
// a run in).
func previewCompleted(p *as.PromotionPreview) bool {
	return p.Status.CompletedAt != nil && p.Status.ObservedGeneration == p.Generation
}

// gatherRendered renders the run's Snapshot for each Environment ahead that
// requires a preview and has a fresh clean one (otherwise the gate waits
// for a preview anyway), as the promotion would apply it, for the gate to
// compare with the preview (w.Rendered). Without a renderer (no
// repo-server) nothing is rendered and the gate asks only for the preview.
// A component that does not render, or bad input, is the gate's Problem;
// the repo-server's unavailability an error (the pass is tried again).
func (r *Reconciler) gatherRendered(ctx context.Context, w *world) error {
	run := w.Run
	if r.Renderer == nil || run.Spec.IsRollback() {
		return nil
	}
	for _, name := range ahead(run, w.Environments, w.Starting) {
		env := w.environment(name)
		if env == nil || env.Spec.Preview == nil || w.Rendered[name] != nil {
			continue
		}
		if len(freshPreviews(w.Previews, env, run.Spec.Application, run.Spec.Snapshot, w.Now.Time, env.Spec.Preview.RequiredWithin.Duration)) == 0 {
			continue
		}
		hashes, err := r.Renderer.Hashes(ctx, run.Namespace, run.Spec.Application, run.Spec.Snapshot, name)
		rendered := &Rendered{Hashes: hashes}
		if ref := kernel.AsRefusal(err); ref != nil {
			rendered = &Rendered{Problem: ref.Message}
		} else if err != nil {
			return err
		}
		if w.Rendered == nil {
			w.Rendered = map[string]*Rendered{}
		}
		w.Rendered[name] = rendered
	}
	return nil
}
