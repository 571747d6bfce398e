package promotionrun

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func entry(run, snap string, result as.PromotionRunCompleteResult) as.PromotionHistoryEntry {
	return as.PromotionHistoryEntry{PromotionRun: run, PromotionRunUID: "uid-" + run, Kind: as.PromotionKindPromotion, Snapshot: snap, Result: result}
}

func history(env string, entries []as.PromotionHistoryEntry, rejected ...string) as.PromotionHistory {
	h := as.PromotionHistory{Spec: as.PromotionHistorySpec{Application: "app", Environment: env}, Status: as.PromotionHistoryStatus{Entries: entries}}
	for _, r := range rejected {
		h.Status.Rejected = append(h.Status.Rejected, as.RejectedSnapshot{Snapshot: r, PromotionRun: "rb"})
	}
	return h
}

func TestRollbackCandidates(t *testing.T) {
	ok, failed := as.PromotionRunCompleteResultSuccess, as.PromotionRunCompleteResultFailure
	prod := history("prod", []as.PromotionHistoryEntry{entry("r1", "s1", ok), entry("r2", "s2", ok), entry("r3", "s3", failed), entry("r4", "s4", ok), entry("r5", "s2", ok)})
	cases := map[string]struct {
		h     *as.PromotionHistory
		bad   string
		other []as.PromotionHistory
		want  []string
	}{
		"newest verified first, each once, never the bad one nor a failed one": {&prod, "s4", nil, []string{"s2", "s1"}},
		"the bad one may be any":                 {&prod, "s2", nil, []string{"s4", "s1"}},
		"rejected in another Environment":        {&prod, "s4", []as.PromotionHistory{history("staging", nil, "s2")}, []string{"s1"}},
		"rejected here":                          {ptr(history("prod", prod.Status.Entries, "s1")), "s4", nil, []string{"s2"}},
		"no history":                             {nil, "s1", nil, nil},
		"nothing verified but the bad one":       {ptr(history("prod", []as.PromotionHistoryEntry{entry("r1", "s1", ok), entry("r2", "s2", failed)})), "s1", nil, nil},
		"an Environment that never verified one": {ptr(history("prod", nil)), "s1", nil, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			all := append([]as.PromotionHistory{}, tc.other...)
			if tc.h != nil {
				all = append(all, *tc.h)
			}
			var got []string
			for _, e := range rollbackCandidates(tc.h, tc.bad, all) {
				got = append(got, e.Snapshot)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestApplyRollback(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	later := metav1.NewTime(now.Add(time.Hour))
	ok := as.PromotionRunCompleteResultSuccess
	st := as.PromotionHistoryStatus{Entries: []as.PromotionHistoryEntry{entry("r1", "s1", ok), entry("r2", "s2", ok)}}

	require.True(t, applyRollback(&st, "rb", "s2", as.SnapshotIdentity{}, now))
	assert.Equal(t, []as.RejectedSnapshot{{Snapshot: "s2", PromotionRun: "rb", Time: now}}, st.Rejected)
	assert.Equal(t, &as.PromotionHold{Since: now, PromotionRun: "rb", Snapshot: "s2"}, st.Hold)
	assert.Equal(t, "", st.Entries[0].RolledBackBy)
	assert.Equal(t, "rb", st.Entries[1].RolledBackBy)

	// A retried pass of the same rollback changes nothing, not even the hold's time.
	assert.False(t, applyRollback(&st, "rb", "s2", as.SnapshotIdentity{}, later))
	assert.Equal(t, now, st.Hold.Since)

	// A second rollback holds again from its own time; a Snapshot is rejected once.
	assert.True(t, applyRollback(&st, "rb2", "s2", as.SnapshotIdentity{}, later))
	assert.Len(t, st.Rejected, 1)
	assert.Equal(t, later, st.Hold.Since)

	// Bounded: the oldest rejections go.
	for i := 0; i < as.MaxRejectedSnapshots+5; i++ {
		applyRollback(&st, "rb", "x"+strings.Repeat("y", i), as.SnapshotIdentity{}, now)
	}
	assert.Len(t, st.Rejected, as.MaxRejectedSnapshots)
	assert.Equal(t, "x"+strings.Repeat("y", 5), st.Rejected[0].Snapshot)
}

func TestHeld(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	before, after := metav1.NewTime(since.Add(-time.Second)), metav1.NewTime(since.Add(time.Second))
	hold := &as.PromotionHold{Since: since, PromotionRun: "rb", Snapshot: "s"}
	cases := map[string]struct {
		h    *as.PromotionHistory
		want bool
	}{
		"no history":                    {nil, false},
		"never rolled back":             {&as.PromotionHistory{}, false},
		"rolled back, not released":     {&as.PromotionHistory{Status: as.PromotionHistoryStatus{Hold: hold}}, true},
		"released before this rollback": {&as.PromotionHistory{Spec: as.PromotionHistorySpec{ReleasedAt: &before}, Status: as.PromotionHistoryStatus{Hold: hold}}, true},
		"released at the same second":   {&as.PromotionHistory{Spec: as.PromotionHistorySpec{ReleasedAt: &since}, Status: as.PromotionHistoryStatus{Hold: hold}}, false},
		"released after":                {&as.PromotionHistory{Spec: as.PromotionHistorySpec{ReleasedAt: &after}, Status: as.PromotionHistoryStatus{Hold: hold}}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, tc.h.Held()) })
	}
}

func TestHeldParents(t *testing.T) {
	auto := as.DeploymentStrategyAppStudioAutomated
	tree := []as.Environment{env("dev", "", auto), env("staging", "dev", auto), env("qa", "dev", auto), env("prod", "staging", auto), env("perf", "qa", auto)}
	held := func(names ...string) func(string) bool {
		return func(e string) bool { return contains(names, e) }
	}
	cases := map[string]struct {
		level, next []string
		held        func(string) bool
		want        []string
	}{
		"nothing held":                     {[]string{"dev"}, []string{"qa", "staging"}, held(), nil},
		"the parent is held":               {[]string{"dev"}, []string{"qa", "staging"}, held("dev"), []string{"dev"}},
		"held but nothing leaves it":       {[]string{"staging", "qa"}, []string{"perf"}, held("staging"), nil},
		"one of two parents":               {[]string{"staging", "qa"}, []string{"perf", "prod"}, held("qa"), []string{"qa"}},
		"both, sorted":                     {[]string{"staging", "qa"}, []string{"perf", "prod"}, held("staging", "qa"), []string{"qa", "staging"}},
		"a held child is entered, not out": {[]string{"dev"}, []string{"staging"}, held("staging"), nil},
		"a leaf":                           {[]string{"prod"}, nil, held("prod"), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, heldParents(tree, tc.level, tc.next, tc.held)) })
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestRejectedRefusal(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	hs := []as.PromotionHistory{history("dev", nil), {Spec: as.PromotionHistorySpec{Application: "app", Environment: "prod"},
		Status: as.PromotionHistoryStatus{Rejected: []as.RejectedSnapshot{{Snapshot: "bad", PromotionRun: "rb", Time: at}}}}}
	run := func(snap string, mod func(*as.PromotionRunSpec)) *as.PromotionRun {
		r := &as.PromotionRun{Spec: as.PromotionRunSpec{Application: "app", Snapshot: snap}}
		mod(&r.Spec)
		return r
	}
	manual := func(force bool) func(*as.PromotionRunSpec) {
		return func(s *as.PromotionRunSpec) {
			s.ManualPromotion = &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Force: force}
		}
	}
	automated := func(s *as.PromotionRunSpec) {
		s.AutomatedPromotion = &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}
	}
	rollback := func(s *as.PromotionRunSpec) {
		s.ManualPromotion = &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true}
	}
	cases := map[string]struct {
		run  *as.PromotionRun
		want string
	}{
		"a manual promotion of a rejected Snapshot": {run("bad", manual(false)),
			"Snapshot bad was rolled back out of Environment prod by rb at 2026-11-26T03:00:00Z and is rejected for Application app; set spec.manualPromotion.force to promote it anyway"},
		"forced":                          {run("bad", manual(true)), ""},
		"automated: never, even the hint": {run("bad", automated), "Snapshot bad was rolled back out of Environment prod by rb at 2026-11-26T03:00:00Z and is rejected for Application app"},
		"a good Snapshot":                 {run("good", manual(false)), ""},
		"a rollback of it":                {run("bad", rollback), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := rejectedRefusal(tc.run, hs)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, as.PromotionRunReasonSnapshotRejected, got.Reason)
			assert.Equal(t, tc.want, got.Message)
		})
	}
}

func TestSnapshotOf(t *testing.T) {
	r := &as.PromotionRun{Spec: as.PromotionRunSpec{Snapshot: "bad", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true}}}
	assert.Equal(t, "", snapshotOf(r), "a rollback deploys nothing before it picked")
	r.Status.Rollback = &as.RollbackStatus{Snapshot: "good"}
	assert.Equal(t, "good", snapshotOf(r))
	assert.Equal(t, "s", snapshotOf(&as.PromotionRun{Spec: as.PromotionRunSpec{Snapshot: "s"}}))
}
