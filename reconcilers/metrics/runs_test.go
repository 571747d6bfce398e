package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudio "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	gitops "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
)

var (
	t0  = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now = t0.Add(90 * time.Second)
)

func promotion(state appstudio.PromotionRunState, result appstudio.PromotionRunCompleteResult, start time.Time) *appstudio.PromotionRun {
	p := &appstudio.PromotionRun{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))}}
	p.Status.State, p.Status.CompletionResult, p.Status.PromotionStartTime = state, result, metav1.NewTime(start)
	return p
}

func TestPromotionFinished(t *testing.T) {
	for name, tc := range map[string]struct {
		old, cur *appstudio.PromotionRun
		result   string
		seconds  float64
		ok       bool
	}{
		"active to success":     {promotion("Active", "", t0), promotion("Completed", "Success", t0), "Success", 90, true},
		"waiting to failure":    {promotion("Waiting", "", time.Time{}), promotion("Completed", "Failure", t0), "Failure", 90, true},
		"no start: creation":    {promotion("", "", time.Time{}), promotion("Completed", "Failure", time.Time{}), "Failure", 150, true},
		"still active":          {promotion("Active", "", t0), promotion("Active", "", t0), "", 0, false},
		"completed before":      {promotion("Completed", "Success", t0), promotion("Completed", "Success", t0), "", 0, false},
		"start in the future":   {promotion("Active", "", now.Add(time.Hour)), promotion("Completed", "Success", now.Add(time.Hour)), "Success", 0, true},
		"completed, no result":  {promotion("Active", "", t0), promotion("Completed", "", t0), "Unknown", 90, true},
		"waiting to active":     {promotion("Waiting", "", time.Time{}), promotion("Active", "", t0), "", 0, false},
		"completed then edited": {promotion("Completed", "Failure", t0), promotion("Completed", "Failure", t0.Add(time.Second)), "", 0, false},
	} {
		result, s, ok := promotionFinished(tc.old, tc.cur, now)
		if result != tc.result || s != tc.seconds || ok != tc.ok {
			t.Errorf("%s: got %q %v %v, want %q %v %v", name, result, s, ok, tc.result, tc.seconds, tc.ok)
		}
	}
}

func syncRun(phase gitops.OperationPhase, started *time.Time) *gitops.GitOpsDeploymentSyncRun {
	r := &gitops.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))}}
	r.Status.Phase = phase
	if started != nil {
		st := metav1.NewTime(*started)
		r.Status.StartedAt = &st
	}
	return r
}

func TestSyncRunFinished(t *testing.T) {
	for name, tc := range map[string]struct {
		old, cur *gitops.GitOpsDeploymentSyncRun
		phase    string
		seconds  float64
		ok       bool
	}{
		"running to succeeded":  {syncRun("Running", &t0), syncRun("Succeeded", &t0), "Succeeded", 90, true},
		"running to failed":     {syncRun("Running", &t0), syncRun("Failed", &t0), "Failed", 90, true},
		"never started: error":  {syncRun("", nil), syncRun("Error", nil), "Error", 150, true},
		"terminating":           {syncRun("Running", &t0), syncRun("Terminating", &t0), "", 0, false},
		"already finished":      {syncRun("Failed", &t0), syncRun("Failed", &t0), "", 0, false},
		"pending to running":    {syncRun("", nil), syncRun("Running", &t0), "", 0, false},
		"succeeded to re-error": {syncRun("Succeeded", &t0), syncRun("Error", &t0), "", 0, false},
	} {
		phase, s, ok := syncRunFinished(tc.old, tc.cur, now)
		if phase != tc.phase || s != tc.seconds || ok != tc.ok {
			t.Errorf("%s: got %q %v %v, want %q %v %v", name, phase, s, ok, tc.phase, tc.seconds, tc.ok)
		}
	}
}

func TestReason(t *testing.T) {
	for in, want := range map[string]string{
		"ErrorOccurred": "ErrorOccurred", "NamespaceNotATenant": "NamespaceNotATenant", "": "Other",
		"has spaces": "Other", "a/b": "Other", "9Lives": "Other",
		"X" + string(make([]byte, 70)): "Other",
	} {
		if got := Reason(in); got != want {
			t.Errorf("Reason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInstrumentHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(HTTPRequestDuration)
	h := InstrumentHandler("test-server", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/teapot" {
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	for _, p := range []string{"/", "/teapot", "/teapot"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, p, nil))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["server"] == "test-server" {
				got[labels["code"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if got["200"] != 1 || got["418"] != 2 || len(got) != 2 {
		t.Errorf("requests by code = %v, want 200:1 418:2", got)
	}
}

// A replica that is not the leader reports no state: sums over replicas
// count each CR once.
func TestStateOnlyWhenElected(t *testing.T) {
	c := &StateCollector{}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("without a cache: %d series", n)
	}
	c.Use(nil, make(chan struct{}))
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("not elected: %d series", n)
	}
}
