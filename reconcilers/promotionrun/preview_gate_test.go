package promotionrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/kernel"
)

func TestPreviewGate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	run := &as.PromotionRun{Spec: as.PromotionRunSpec{Snapshot: "snap", Application: "app",
		ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}
	requiring := &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: as.EnvironmentSpec{Preview: &as.PreviewPolicy{RequiredWithin: metav1.Duration{Duration: 15 * time.Minute}}}}
	preview := func(mut func(*as.PromotionPreview)) as.PromotionPreview {
		at := metav1.NewTime(now.Add(-5 * time.Minute))
		p := as.PromotionPreview{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
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
		starts   bool
	}{
		{"no preview required", &as.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, nil, true},
		{"required, none", requiring, nil, false},
		{"a clean recent preview", requiring, []as.PromotionPreview{preview(nil)}, true},
		{"exactly requiredWithin ago", requiring, []as.PromotionPreview{preview(ago(15 * time.Minute))}, true},
		{"too old", requiring, []as.PromotionPreview{preview(ago(16 * time.Minute))}, false},
		{"from the future (clock skew) does not count", requiring, []as.PromotionPreview{preview(ago(-time.Minute))}, false},
		{"dry-run errors", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Status.Clean = false })}, false},
		{"still running", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Status.CompletedAt = nil })}, false},
		{"of an older spec", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Generation = 2 })}, false},
		{"being deleted", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.DeletionTimestamp = &metav1.Time{Time: now} })}, false},
		{"another Snapshot", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.Snapshot = "other" })}, false},
		{"another Application", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.Application = "other" })}, false},
		{"another Environment", requiring, []as.PromotionPreview{preview(func(p *as.PromotionPreview) { p.Spec.TargetEnvironment = "staging" })}, false},
		{"one good among bad ones", requiring, []as.PromotionPreview{
			preview(func(p *as.PromotionPreview) { p.Status.Clean = false }), preview(ago(20 * time.Minute)), preview(nil)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := previewGate(run, tt.env, tt.previews, now)
			if tt.starts {
				assert.NoError(t, err)
				return
			}
			w := kernel.AsWaiting(err)
			if assert.NotNil(t, w, "want a Waiting, got %v", err) {
				assert.Equal(t, ReasonPreviewRequired, w.Reason)
				assert.Contains(t, w.For, "Snapshot snap to Environment prod completed within 15m0s")
			}
		})
	}
}
