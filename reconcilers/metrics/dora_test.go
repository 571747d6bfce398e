package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

var doraT0 = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

func at(minutes int) *metav1.Time {
	t := metav1.NewTime(doraT0.Add(time.Duration(minutes) * time.Minute))
	return &t
}

func ent(uid string, kind as.PromotionKind, result as.PromotionRunCompleteResult, start, end int, rolledBack string) as.PromotionHistoryEntry {
	return as.PromotionHistoryEntry{PromotionRun: uid, PromotionRunUID: uid, Kind: kind, Snapshot: "s-" + uid, SnapshotCreated: at(0),
		StartTime: at(start), CompletionTime: *at(end), Result: result, RolledBackBy: rolledBack}
}

func analysed(e as.PromotionHistoryEntry, phases ...as.AnalysisPhase) as.PromotionHistoryEntry {
	for i, p := range phases {
		e.Analysis = append(e.Analysis, as.AnalysisCheckStatus{Name: fmt.Sprintf("check-%d", i), Phase: p})
	}
	return e
}

func hist(entries ...as.PromotionHistoryEntry) *as.PromotionHistory {
	return &as.PromotionHistory{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant"}, Spec: as.PromotionHistorySpec{Application: "app", Environment: "prod"},
		Status: as.PromotionHistoryStatus{Entries: entries}}
}

func TestDoraOf(t *testing.T) {
	P, R := as.PromotionKindPromotion, as.PromotionKindRollback
	ok, failed := as.PromotionRunCompleteResultSuccess, as.PromotionRunCompleteResultFailure
	good := ent("1", P, ok, 5, 10, "")
	cases := map[string]struct {
		old, cur *as.PromotionHistory
		want     dora
	}{
		"a first verified promotion: frequency and lead time, nothing restored": {hist(), hist(good),
			dora{promotions: map[string]int{"Success": 1}, failures: map[string]int{}, leadTimes: []float64{600}}},
		"nothing new": {hist(good), hist(good), dora{promotions: map[string]int{}, failures: map[string]int{}}},
		"a failed promotion": {hist(good), hist(good, ent("2", P, failed, 20, 30, "")),
			dora{promotions: map[string]int{"Failure": 1}, failures: map[string]int{"failed": 1}}},
		"a promotion failed by its analysis": {hist(good), hist(good, analysed(ent("2", P, failed, 20, 30, ""), as.AnalysisSuccessful, as.AnalysisFailed)),
			dora{promotions: map[string]int{"Failure": 1}, failures: map[string]int{"analysis": 1}}},
		"a promotion whose analysis passed and that failed otherwise": {hist(good), hist(good, analysed(ent("2", P, failed, 20, 30, ""), as.AnalysisSuccessful)),
			dora{promotions: map[string]int{"Failure": 1}, failures: map[string]int{"failed": 1}}},
		"the automatic rollback after it restores from the failure": {
			hist(good, ent("2", P, failed, 20, 30, "")),
			hist(good, ent("2", P, failed, 20, 30, "3"), ent("3", R, ok, 31, 35, "")),
			dora{promotions: map[string]int{}, failures: map[string]int{}, restores: []float64{300}}},
		"a manual rollback of a verified promotion: a failure, restored from the rollback's request": {
			hist(good, ent("2", P, ok, 20, 30, "")),
			hist(good, ent("2", P, ok, 20, 30, "3"), ent("3", R, ok, 50, 52, "")),
			dora{promotions: map[string]int{}, failures: map[string]int{"rolled_back": 1}, restores: []float64{120}}},
		"a promotion after two failures restores from the first": {
			hist(good, ent("2", P, failed, 20, 30, ""), ent("3", P, failed, 40, 50, "")),
			hist(good, ent("2", P, failed, 20, 30, ""), ent("3", P, failed, 40, 50, ""), ent("4", P, ok, 60, 70, "")),
			dora{promotions: map[string]int{"Success": 1}, failures: map[string]int{}, leadTimes: []float64{70 * 60}, restores: []float64{40 * 60}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, doraOf(tc.old, tc.cur)) })
	}
}

func TestDoraObserve(t *testing.T) {
	h := hist(ent("1", as.PromotionKindPromotion, as.PromotionRunCompleteResultSuccess, 5, 10, ""))
	before := testutil.ToFloat64(Promotions.WithLabelValues("tenant", "app", "prod", "Success"))
	doraOf(hist(), h).observe(h)
	assert.Equal(t, before+1, testutil.ToFloat64(Promotions.WithLabelValues("tenant", "app", "prod", "Success")))
}
