package promotionrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

// TestPreviewGate decides the preview gate of one Environment on an injected
// clock, alone (previewGate) and among the other gates (gate).
func TestPreviewGate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	policy := &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 15 * time.Minute}}
	requiring := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "prod"}, Spec: as.EnvironmentSpec{Preview: policy}}
	preview := func(mut func(*as.PromotionPreview)) as.PromotionPreview {
		at := metav1.NewTime(now.Add(-5 * time.Minute))
		p := as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p", Generation: 1},
			Spec:   as.PromotionPreviewSpec{Snapshot: "snap", Application: "app", TargetEnvironment: "prod"},
			Status: as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &at, Clean: true}}
		if mut != nil {
			mut(&p)
		}
		return p
	}
	ago := func(d time.Duration) func(*as.PromotionPreview) {
		return func(p *as.PromotionPreview) { at := metav1.NewTime(now.Add(-d)); p.Status.CompletedAt = &at }
	}
	tests := []struct {
		name     string
		env      *as.Environment
		previews []as.PromotionPreview
		rollback bool
		starts   bool
	}{
		{"no preview required", &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "prod"}}, nil, false, true},
		{"required, none", requiring, nil, false, false},
		{"a clean recent preview", requiring, []as.PromotionPreview{preview(nil)}, false, true},
		{"exactly requiredWithin ago", requiring, []as.PromotionPreview{preview(ago(15 * time.Minute))}, false, true},
		{"too old", requiring, []as.PromotionPreview{preview(ago(16 * time.Minute))}, false, false},
		{"from the future (clock skew) does not count", requiring, []as.PromotionPreview{preview(ago(-time.Minute))}, false, false},
		{"dry-run errors", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Status.Clean = false })}, false, false},
		{"still running", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Status.CompletedAt = nil })}, false, false},
		{"of an older spec", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Generation = 2 })}, false, false},
		{"being deleted", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.DeletionTimestamp = &metav1.Time{Time: now} })}, false, false},
		{"another Snapshot", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.Snapshot = "other" })}, false, false},
		{"another Application", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.Application = "other" })}, false, false},
		{"another Environment", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.TargetEnvironment = "staging" })}, false, false},
		{"another namespace", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Namespace = "other" })}, false, false},
		{"one good among bad ones", requiring, []as.PromotionPreview{
			preview(func(p *as.PromotionPreview) { p.Status.Clean = false }), preview(ago(20 * time.Minute)), preview(nil)}, false, true},
		{"a rollback is not held", requiring, nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := previewGate(gateInput{Application: "app", Snapshot: "snap", Env: tt.env, Previews: tt.previews, Rollback: tt.rollback, Now: now})
			if tt.starts {
				assert.Nil(t, w)
				return
			}
			if assert.NotNil(t, w) {
				assert.Equal(t, ReasonPreviewRequired, w.Reason)
				assert.Equal(t, "a clean PromotionPreview of Snapshot snap to Environment prod completed within 15m0s (the Environment requires it)", w.For)
				// A completed preview wakes the run; this covers a missed event.
				assert.Equal(t, kernel.WaitingRetry, w.After)
			}
		})
	}

	// Among the gates: asked for last, once nothing else holds the promotion.
	approvals := &as.ApprovalGate{Required: 1}
	withGates := func(g *as.PromotionGates) *as.Environment {
		e := requiring.DeepCopy()
		e.Spec.Gates = g
		return e
	}
	approved := []as.PromotionApproval{approval("snap", "prod", "alice")}
	approved[0].Namespace = "t"
	for name, c := range map[string]struct {
		in     gateInput
		reason string
	}{
		"frozen: the freeze is reported":                 {gateInput{Env: withGates(&as.PromotionGates{Freeze: &as.FreezeSwitch{Frozen: true}})}, as.WaitingReasonFrozen},
		"not approved: the approval is reported":         {gateInput{Env: withGates(&as.PromotionGates{Approvals: approvals})}, as.WaitingReasonAwaitingApproval},
		"approved, no preview: the preview is asked for": {gateInput{Env: withGates(&as.PromotionGates{Approvals: approvals}), Approvals: approved}, ReasonPreviewRequired},
		"approved and previewed":                         {gateInput{Env: withGates(&as.PromotionGates{Approvals: approvals}), Approvals: approved, Previews: []as.PromotionPreview{preview(nil)}}, ""},
		"a parent's soak first": {gateInput{Env: requiring, Parent: &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "dev"},
			Spec: as.EnvironmentSpec{Gates: &as.PromotionGates{SoakTime: &metav1.Duration{Duration: time.Hour}}}}, VerifiedInParent: &now}, as.WaitingReasonSoakTime},
	} {
		t.Run(name, func(t *testing.T) {
			c.in.Application, c.in.Snapshot, c.in.Now = "app", "snap", now
			w := gate(identified(c.in))
			if c.reason == "" {
				assert.Nil(t, w)
				return
			}
			if assert.NotNil(t, w) {
				assert.Equal(t, c.reason, w.Reason)
			}
		})
	}
}

// TestPreviewGateComparesRenderHashes: where the sidecar renders, a fresh
// clean preview lets the promotion in only while every component renders
// what the preview recorded; a release preview counts for each Environment
// whose result is clean.
func TestPreviewGateComparesRenderHashes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	env := &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "prod"},
		Spec: as.EnvironmentSpec{Preview: &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 15 * time.Minute}}}}
	comps := func(web, api string) []as.PreviewComponentSummary {
		return []as.PreviewComponentSummary{{Name: "api", RenderHash: api}, {Name: "web", RenderHash: web}}
	}
	single := func(ago time.Duration, c []as.PreviewComponentSummary) as.PromotionPreview {
		at := metav1.NewTime(now.Add(-ago))
		return as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p", Generation: 1},
			Spec:   as.PromotionPreviewSpec{Snapshot: "snap", Application: "app", TargetEnvironment: "prod"},
			Status: as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &at, Clean: true, Components: c}}
	}
	release := func(results ...as.PreviewEnvironmentResult) as.PromotionPreview {
		at := metav1.NewTime(now.Add(-time.Minute))
		clean := true
		for _, r := range results {
			clean = clean && r.Clean
		}
		return as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "r", Generation: 1},
			Spec:   as.PromotionPreviewSpec{Snapshot: "snap", Application: "app", AllEnvironments: true},
			Status: as.PromotionPreviewStatus{ObservedGeneration: 1, CompletedAt: &at, Clean: clean, Environments: results}}
	}
	now1 := &Rendered{Hashes: map[string]string{"web": "sha256:w1", "api": "sha256:a1"}}
	tests := []struct {
		name     string
		previews []as.PromotionPreview
		rendered *Rendered
		reason   string // "" starts
		says     string
	}{
		{"renders as previewed", []as.PromotionPreview{single(time.Minute, comps("sha256:w1", "sha256:a1"))}, now1, "", ""},
		{"no renderer: the clean preview is enough", []as.PromotionPreview{single(time.Minute, comps("sha256:w0", "sha256:a1"))}, nil, "", ""},
		{"web renders differently", []as.PromotionPreview{single(time.Minute, comps("sha256:w0", "sha256:a1"))}, now1, ReasonPreviewOutdated,
			"a new preview of Snapshot snap to Environment prod: component web renders differently than when it was previewed (the source or the Environment's parameters changed since); create or update a PromotionPreview to preview it again"},
		{"a preview without hashes (an older sidecar's)", []as.PromotionPreview{single(time.Minute, comps("", ""))}, now1, ReasonPreviewOutdated, "component api renders differently"},
		{"a component added since", []as.PromotionPreview{single(time.Minute, comps("sha256:w1", "sha256:a1")[1:])}, now1, ReasonPreviewOutdated, "component api"},
		{"a component gone since", []as.PromotionPreview{single(time.Minute, comps("sha256:w1", "sha256:a1"))}, &Rendered{Hashes: map[string]string{"web": "sha256:w1"}}, ReasonPreviewOutdated, "component api"},
		{"an old outdated preview and a new matching one", []as.PromotionPreview{single(10*time.Minute, comps("sha256:w0", "sha256:a1")), single(time.Minute, comps("sha256:w1", "sha256:a1"))}, now1, "", ""},
		{"the render fails now", []as.PromotionPreview{single(time.Minute, comps("sha256:w1", "sha256:a1"))}, &Rendered{Problem: "component web does not render: kustomize build failed"}, ReasonPreviewOutdated,
			"Snapshot snap to be rendered for Environment prod to compare with its preview: component web does not render: kustomize build failed"},
		{"a stale preview: asked for first", []as.PromotionPreview{single(20*time.Minute, comps("sha256:w1", "sha256:a1"))}, now1, ReasonPreviewRequired, "completed within 15m0s"},
		{"a release preview clean in prod", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "dev", Clean: true, Components: comps("sha256:wd", "sha256:ad")},
			as.PreviewEnvironmentResult{Name: "prod", Clean: true, Components: comps("sha256:w1", "sha256:a1")})}, now1, "", ""},
		{"a release preview clean in prod, not in dev: prod still enters", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "dev", Error: "the cluster credentials of Environment \"dev\" are not ready"},
			as.PreviewEnvironmentResult{Name: "prod", Clean: true, Components: comps("sha256:w1", "sha256:a1")})}, now1, "", ""},
		{"a release preview with dry-run errors in prod", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "prod", Clean: false, Components: comps("sha256:w1", "sha256:a1")})}, now1, ReasonPreviewRequired, ""},
		{"a release preview that could not preview prod", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "prod", Error: "no credentials"})}, now1, ReasonPreviewRequired, ""},
		{"a release preview without prod", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "dev", Clean: true, Components: comps("sha256:w1", "sha256:a1")})}, now1, ReasonPreviewRequired, ""},
		{"a release preview whose prod renders differently", []as.PromotionPreview{release(
			as.PreviewEnvironmentResult{Name: "prod", Clean: true, Components: comps("sha256:w1", "sha256:a0")})}, now1, ReasonPreviewOutdated, "component api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := previewGate(gateInput{Application: "app", Snapshot: "snap", Env: env, Previews: tt.previews, Rendered: tt.rendered, Now: now})
			if tt.reason == "" {
				assert.Nil(t, w)
				return
			}
			if assert.NotNil(t, w) {
				assert.Equal(t, tt.reason, w.Reason)
				assert.Contains(t, w.For, tt.says)
				assert.Equal(t, kernel.WaitingRetry, w.After)
			}
		})
	}
	// A rollback is never held, whatever renders.
	assert.Nil(t, previewGate(gateInput{Application: "app", Snapshot: "snap", Env: env, Rendered: now1, Rollback: true, Now: now}))
}
