//go:build !unit

package promotionrun_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/promotionrun"
	"github.com/gitops-service/gitops-service/test/stack"
)

// errorRatio serves a metrics endpoint whose value the test sets.
type errorRatio struct{ v atomic.Value }

func (g *errorRatio) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintf(w, "# TYPE shop_error_ratio gauge\nshop_error_ratio %s\n", g.v.Load())
}

// scraped waits until Prometheus' answer for shop_error_ratio has value.
func scraped(t *testing.T, prom *stack.Prometheus, value string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(prom.URL + "/api/v1/query?query=shop_error_ratio")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), value)
	}, wait, 200*time.Millisecond, "Prometheus scraped %s", value)
}

// setAnalysis gives the Environment analysis checks (and automatic rollback).
func setAnalysis(t *testing.T, ns, env string, rollback bool, checks ...as.AnalysisCheck) {
	t.Helper()
	updateEnv(t, ns, env, func(e *as.Environment) {
		e.Spec.Analysis = &as.AnalysisPolicy{Checks: checks}
		if rollback {
			e.Spec.Rollback = &as.RollbackPolicy{Automatic: true}
		}
	})
}

func analysisOf(r *as.PromotionRun, env string) []as.AnalysisCheckStatus {
	for _, s := range r.Status.EnvironmentStatus {
		if s.EnvironmentName == env {
			return s.Analysis
		}
	}
	return nil
}

// TestAnalysisVerifiesAndRollsBack: staging analyses promotions with a real
// Prometheus (scraping an endpoint the test serves) and a real HTTP server.
// While the error ratio is good, a promotion is verified after its count of
// measurements, recorded in the run and the history; once it is bad, the
// next promotion fails its analysis and staging rolls it back by itself.
func TestAnalysisVerifiesAndRollsBack(t *testing.T) {
	ns := tenant(t)
	playArgo(t, ns)
	ratio := &errorRatio{}
	ratio.v.Store("0.01")
	target := httptest.NewServer(ratio)
	defer target.Close()
	var health atomic.Value
	health.Store("ok")
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"status":%q}`, health.Load())
	}))
	defer web.Close()
	prom := stack.StartPrometheus(t, time.Second, strings.TrimPrefix(target.URL, "http://"))
	// Wait until Prometheus has a sample, so the first measurement is the served value.
	scraped(t, prom, `"0.01"`)

	interval := &metav1.Duration{Duration: 5 * time.Second}
	setAnalysis(t, ns, "staging", true,
		as.AnalysisCheck{Name: "error-ratio", Interval: interval, Count: 2, Prometheus: &as.PrometheusCheck{Address: prom.URL,
			Query: "max(shop_error_ratio)", SuccessCondition: as.AnalysisCondition{Operator: "<=", Value: "0.05"}}},
		as.AnalysisCheck{Name: "health", Interval: interval, Web: &as.WebCheck{URL: web.URL + "/health", JSONField: "status",
			SuccessCondition: &as.AnalysisCondition{Operator: "==", Value: "ok"}}})
	snapshot(t, ns, "snap-a2", "quay.io/x/fe:v2")

	p1 := run(t, manual(ns, "p1", "appa", "snap-a", "staging"), "verified after its analysis", succeeded)
	stack.WaitForEvent(t, k8s, p1, corev1.EventTypeNormal, "AnalysisPassed", "", wait)
	results := analysisOf(p1, "staging")
	require.Len(t, results, 2)
	assert.Equal(t, as.AnalysisSuccessful, results[0].Phase)
	assert.Equal(t, int32(2), results[0].Successes, "count measurements")
	assert.Equal(t, "0.01", results[0].Value)
	assert.NotNil(t, results[0].LastCheckTime)
	assert.Nil(t, results[0].NextCheckTime, "no next check once passed")
	assert.Equal(t, as.AnalysisSuccessful, results[1].Phase)
	assert.Equal(t, "ok", results[1].Value)
	require.True(t, results[0].LastCheckTime.Sub(p1.Status.EnvironmentStatus[0].VerifiedTime.Time) >= interval.Duration-time.Second,
		"the second measurement an interval after the first: %v, verified %v", results[0].LastCheckTime, p1.Status.EnvironmentStatus[0].VerifiedTime)
	h := getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 1)
	assert.Equal(t, results, h.Status.Entries[0].Analysis, "the history keeps the results")

	ratio.v.Store("0.4")
	scraped(t, prom, `"0.4"`)
	p2 := run(t, manual(ns, "p2", "appa", "snap-a2", "staging"), "failed by its analysis", failedWith("analysis check error-ratio failed in staging: 0.4 is not <= 0.05"))
	warning(t, p2, promotionrun.ReasonAnalysisFailed)
	results = analysisOf(p2, "staging")
	require.Len(t, results, 2)
	assert.Equal(t, as.AnalysisFailed, results[0].Phase)
	assert.Equal(t, "0.4", results[0].Value)

	rb := stack.WaitFor(t, k8s, &as.PromotionRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p2-rollback"}}, wait,
		"the automatic rollback completed", func(r *as.PromotionRun) bool { return r.Status.State == as.PromotionRunStateCompleted })
	require.True(t, succeeded(rb), "the rollback is not analysed (the metric is still bad): %+v", rb.Status)
	assert.Empty(t, analysisOf(rb, "staging"))
	assert.Equal(t, "snap-a", bindingSnapshot(t, ns, "staging"))
	h = getHistory(t, ns, "staging")
	require.Len(t, h.Status.Entries, 3)
	assert.Equal(t, as.PromotionRunCompleteResultFailure, h.Status.Entries[1].Result)
	assert.Equal(t, as.AnalysisFailed, h.Status.Entries[1].Analysis[0].Phase)
	assert.True(t, h.Held())
}

// TestAnalysisCredentialsComeFromTheTenantsNamespace: a check's
// credentials Secret is read from the Environment's namespace only (one of
// that name in another namespace is not used), and credentials are never
// sent over plain http.
func TestAnalysisCredentialsComeFromTheTenantsNamespace(t *testing.T) {
	ctx := context.Background()
	ns, other := tenant(t), tenant(t)
	playArgo(t, ns)
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer web.Close()
	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "creds"},
		StringData: map[string]string{"token": "someone-elses"}}))
	setAnalysis(t, ns, "staging", false, as.AnalysisCheck{Name: "health", Web: &as.WebCheck{URL: web.URL, CredentialsSecret: "creds"}})
	run(t, manual(ns, "p1", "appa", "snap-a", "staging"), "failed: no such Secret in its namespace",
		failedWith(fmt.Sprintf(`analysis check health failed in staging: credentials Secret "creds" not found in namespace %s`, ns)))

	require.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		StringData: map[string]string{"token": "mine"}}))
	p2 := run(t, manual(ns, "p2", "appa", "snap-a", "staging"), "failed: credentials only over https",
		failedWith("credentials are only sent over https"))
	assert.Zero(t, hits.Load(), "nothing was sent")
	for _, c := range p2.Status.Conditions {
		assert.NotContains(t, c.Message, "mine")
	}
	var events corev1.EventList
	require.NoError(t, k8s.List(ctx, &events, client.InNamespace(ns)))
	for _, e := range events.Items {
		assert.NotContains(t, e.Message, "mine")
	}
}
