package promotionrun

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/manifests/install"
)

func TestHistoryName(t *testing.T) {
	assert.Equal(t, "app.prod", HistoryName("app", "prod"))
	assert.NotEqual(t, HistoryName("a-b", "c"), HistoryName("a", "b-c"))
	long := strings.Repeat("a", 253)
	for _, env := range []string{"e", strings.Repeat("p", 63)} {
		n := HistoryName(long, env)
		assert.Empty(t, validation.IsDNS1123Subdomain(n), n)
		assert.True(t, strings.HasSuffix(n, "."+env))
		assert.NotEqual(t, n, HistoryName(long[:252]+"b", env), "hashed names of two applications differ")
	}
}

func TestHistoryEntries(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	created := metav1.NewTime(now.Add(-time.Hour))
	snapCreated := metav1.NewTime(now.Add(-2 * time.Hour))
	run := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "u", CreationTimestamp: created},
		Spec: as.PromotionRunSpec{Snapshot: "s", Application: "app", AutomatedPromotion: &as.AutomatedPromotionConfiguration{InitialEnvironment: "dev"}},
		Status: as.PromotionRunStatus{EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
			{Step: 1, EnvironmentName: "dev", Status: as.PromotionRunEnvironmentStatusSuccess, DisplayStatus: "ok"},
			{Step: 2, EnvironmentName: "qa", Status: as.PromotionRunEnvironmentStatusFailure, DisplayStatus: "timed out"},
			{Step: 2, EnvironmentName: "staging", Status: as.PromotionRunEnvironmentStatusInProgress, DisplayStatus: "Promoting"},
		}}}
	got := historyEntries(run, &snapCreated, "", now)
	assert.Equal(t, map[string]as.PromotionHistoryEntry{
		"dev": {PromotionRun: "r", PromotionRunUID: "u", Kind: as.PromotionKindPromotion, Snapshot: "s", SnapshotCreated: &snapCreated, StartTime: &created,
			CompletionTime: now, Result: as.PromotionRunCompleteResultSuccess, Message: "ok"},
		"qa": {PromotionRun: "r", PromotionRunUID: "u", Kind: as.PromotionKindPromotion, Snapshot: "s", SnapshotCreated: &snapCreated, StartTime: &created,
			CompletionTime: now, Result: as.PromotionRunCompleteResultFailure, Message: "timed out"},
	}, got, "a step in progress makes no entry")

	rb := &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "rb", UID: "v"},
		Spec: as.PromotionRunSpec{Snapshot: "bad", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: "prod", Rollback: true}},
		Status: as.PromotionRunStatus{Rollback: &as.RollbackStatus{Snapshot: "good"}, EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
			{Step: 1, EnvironmentName: "prod", Status: as.PromotionRunEnvironmentStatusSuccess}}}}
	e := historyEntries(rb, nil, "", now)["prod"]
	assert.Equal(t, as.PromotionKindRollback, e.Kind)
	assert.Equal(t, "good", e.Snapshot, "a rollback's entry is what it rolled back to")
	assert.Empty(t, e.PromotedBy, "a run without requestedBy was promoted by someone unknown")

	rb.Spec.RequestedBy = &as.Requester{User: "argocd:alice", Groups: []string{"argocd:ops"}}
	rb.CreationTimestamp = created
	enforced := install.Enforcement{Since: created.Add(-time.Minute)}
	assert.Equal(t, "argocd:alice", historyEntries(rb, nil, promotedBy(rb, enforced), now)["prod"].PromotedBy, "the history names who requested the run")
	assert.Empty(t, promotedBy(rb, install.Enforcement{Problem: "binding deleted"}), "a requester the API server did not check is unknown")
	assert.Empty(t, promotedBy(rb, install.Enforcement{Since: created.Time}), "a run created before the policies were (or within their grace) has an unchecked requester")
}

func TestUpsertEntryIsBoundedAndOncePerRun(t *testing.T) {
	var st as.PromotionHistoryStatus
	for i := 0; i < as.MaxHistoryEntries+7; i++ {
		e := entry(fmt.Sprint(i), "s", as.PromotionRunCompleteResultSuccess)
		assert.True(t, upsertEntry(&st, e))
		assert.False(t, upsertEntry(&st, e), "a run's entry is written once")
	}
	assert.Len(t, st.Entries, as.MaxHistoryEntries)
	assert.Equal(t, "7", st.Entries[0].PromotionRun, "the oldest went first")
	assert.Equal(t, fmt.Sprint(as.MaxHistoryEntries+6), st.Entries[len(st.Entries)-1].PromotionRun)
}

// A step's entry records what the signature gate verified, at most as many
// images as the CRD keeps; a rollback's records none.
func TestRecordsKeepTheVerifications(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC))
	var many []as.ImageVerification
	for i := range maxVerifications + 6 {
		many = append(many, as.ImageVerification{Component: fmt.Sprint("c", i), Image: fmt.Sprintf("r.example/c%d@sha256:aa", i), Verified: true})
	}
	w := &world{Now: now, Environments: []as.Environment{{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, {ObjectMeta: metav1.ObjectMeta{Name: "prod"}}},
		Signatures: map[string][]as.ImageVerification{"dev": many[:2], "prod": many}}
	run := func(name string, rollback bool, env string) *as.PromotionRun {
		return &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "u-" + types.UID(name)},
			Spec: as.PromotionRunSpec{Snapshot: "s", Application: "app", ManualPromotion: &as.ManualPromotionConfiguration{TargetEnvironment: env, Rollback: rollback}},
			Status: as.PromotionRunStatus{Rollback: &as.RollbackStatus{Snapshot: "s"}, EnvironmentStatus: []as.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: env, Status: as.PromotionRunEnvironmentStatusSuccess}}}}
	}
	got := records(w, run("to-dev", false, "dev"))
	assert.Equal(t, many[:2], got[0].Entry.Verifications)
	got = records(w, run("to-prod", false, "prod"))
	assert.Equal(t, many[:maxVerifications], got[0].Entry.Verifications)
	got = records(w, run("back", true, "prod"))
	assert.Nil(t, got[0].Entry.Verifications, "a rollback returns to a Snapshot verified before")
}
