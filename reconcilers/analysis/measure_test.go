//go:build !unit

package analysis_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/analysis"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
	"github.com/gitops-service/gitops-service/test/stack"
)

// loopbackAllowed is the policy of a platform that allows 127.0.0.1 (as the
// test stack's does); the zero policy refuses it.
var loopbackAllowed = &egress.Policy{AllowRanges: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// gauge serves a Prometheus metrics endpoint whose value the test sets.
type gauge struct{ v atomic.Value }

func (g *gauge) set(s string) { g.v.Store(s) }

func (g *gauge) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE shop_error_ratio gauge\nshop_error_ratio{app=\"shop\"} %s\n", g.v.Load())
}

// measureUntil measures check until ok says the measurement is the one
// expected (Prometheus scrapes the new value within a scrape interval).
func measureUntil(t *testing.T, a analysis.Access, check as.AnalysisCheck, ok func(analysis.Measurement) bool) analysis.Measurement {
	t.Helper()
	var m analysis.Measurement
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if m = analysis.Measure(context.Background(), nil, a, check, metav1.Now()); ok(m) {
			return m
		}
	}
	t.Fatalf("the measurement never became the one expected; last: %+v", m)
	return m
}

// TestPrometheusCheckAgainstARealPrometheus: a real Prometheus scrapes a
// metrics endpoint the test serves; the check passes while the value is
// good and fails once it is bad, saying why with the value only.
func TestPrometheusCheckAgainstARealPrometheus(t *testing.T) {
	g := &gauge{}
	g.set("0.01")
	target := httptest.NewServer(g)
	defer target.Close()
	prom := stack.StartPrometheus(t, time.Second, strings.TrimPrefix(target.URL, "http://"))
	check := as.AnalysisCheck{Name: "error-rate", Prometheus: &as.PrometheusCheck{Address: prom.URL,
		Query: `max(shop_error_ratio{app="shop"})`, SuccessCondition: as.AnalysisCondition{Operator: "<=", Value: "0.05"}}}
	a := analysis.Access{Namespace: "jane", Egress: loopbackAllowed}

	good := measureUntil(t, a, check, func(m analysis.Measurement) bool { return m.Value != "" })
	assert.True(t, good.OK, "%+v", good)
	assert.Equal(t, "0.01", good.Value)
	assert.Equal(t, "0.01 <= 0.05", good.Message)

	g.set("0.25")
	bad := measureUntil(t, a, check, func(m analysis.Measurement) bool { return m.Value == "0.25" })
	assert.False(t, bad.OK)
	assert.Equal(t, "0.25 is not <= 0.05", bad.Message)

	// A query that finds nothing is a failed measurement, not a pass.
	none := check
	none.Prometheus = &as.PrometheusCheck{Address: prom.URL, Query: `shop_error_ratio{app="nothing"}`, SuccessCondition: check.Prometheus.SuccessCondition}
	m := analysis.Measure(context.Background(), nil, a, none, metav1.Now())
	assert.False(t, m.OK)
	assert.Equal(t, "the query returned no sample", m.Message)

	// A query Prometheus refuses: its type, never its message.
	broken := check
	broken.Prometheus = &as.PrometheusCheck{Address: prom.URL, Query: `sum(`, SuccessCondition: check.Prometheus.SuccessCondition}
	m = analysis.Measure(context.Background(), nil, a, broken, metav1.Now())
	assert.False(t, m.OK)
	assert.Equal(t, "query failed: Prometheus refused the query (bad_data)", m.Message)
}

// TestWebCheckAgainstARealServer: the status and a JSON field of a real
// HTTP server's answer, which the test changes.
func TestWebCheckAgainstARealServer(t *testing.T) {
	var status atomic.Value
	status.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "internal detail: db password hunter2", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"status":{"state":%q,"replicas":3},"token":"hunter2"}`, status.Load())
	}))
	defer srv.Close()
	a := analysis.Access{Namespace: "jane", Egress: loopbackAllowed}
	check := as.AnalysisCheck{Name: "ready", Web: &as.WebCheck{URL: srv.URL + "/health", JSONField: "status.state",
		SuccessCondition: &as.AnalysisCondition{Operator: "==", Value: "ok"}}}

	m := analysis.Measure(context.Background(), nil, a, check, metav1.Now())
	assert.True(t, m.OK, "%+v", m)
	assert.Equal(t, "ok", m.Value)

	status.Store("degraded")
	m = analysis.Measure(context.Background(), nil, a, check, metav1.Now())
	assert.False(t, m.OK)
	assert.Equal(t, `status.state is "degraded", not == ok`, m.Message)

	replicas := as.AnalysisCheck{Name: "replicas", Web: &as.WebCheck{URL: srv.URL, JSONField: "status.replicas",
		SuccessCondition: &as.AnalysisCondition{Operator: ">=", Value: "2"}}}
	m = analysis.Measure(context.Background(), nil, a, replicas, metav1.Now())
	assert.True(t, m.OK, "%+v", m)
	assert.Equal(t, "3", m.Value)

	missing := as.AnalysisCheck{Name: "missing", Web: &as.WebCheck{URL: srv.URL + "/missing"}}
	m = analysis.Measure(context.Background(), nil, a, missing, metav1.Now())
	assert.False(t, m.OK)
	assert.Equal(t, "HTTP status 404, expected 200", m.Message)
	assert.NotContains(t, m.Message+m.Value, "hunter2", "nothing the server sent but the value extracted")
}

// TestEgressRefusesLoopbackAndLinkLocal: unless the platform allows them,
// an analysis URL cannot reach loopback (the sidecar's own pod), link-local
// (cloud metadata) or in-cluster addresses; nothing is sent to them.
func TestEgressRefusesLoopbackAndLinkLocal(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	refused := map[string]*egress.Policy{
		"loopback, the default policy":    nil,
		"loopback, another range allowed": {AllowRanges: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
	}
	for name, policy := range refused {
		for _, check := range []as.AnalysisCheck{
			{Name: "web", Web: &as.WebCheck{URL: srv.URL}},
			{Name: "prom", Prometheus: &as.PrometheusCheck{Address: srv.URL, Query: "up", SuccessCondition: as.AnalysisCondition{Operator: "==", Value: "1"}}},
			{Name: "by-name", Web: &as.WebCheck{URL: "http://localhost:" + port}},
		} {
			m := analysis.Measure(context.Background(), nil, analysis.Access{Egress: policy}, check, metav1.Now())
			assert.False(t, m.OK, "%s %s", name, check.Name)
			assert.Contains(t, m.Message, "not connected: the host resolves to a loopback, link-local or cluster-internal address", "%s %s", name, check.Name)
			assert.NotContains(t, m.Message, "127.0.0.1", "the address is never named")
		}
	}
	// Link-local (cloud metadata) and an in-cluster service address.
	cluster := &egress.Policy{ClusterRanges: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://10.96.0.1/"} {
		m := analysis.Measure(context.Background(), nil, analysis.Access{Egress: cluster}, as.AnalysisCheck{Name: "x", Web: &as.WebCheck{URL: u}}, metav1.Now())
		assert.Contains(t, m.Message, "not connected", u)
	}
	assert.Zero(t, hits.Load(), "nothing reached the server")

	m := analysis.Measure(context.Background(), nil, analysis.Access{Egress: loopbackAllowed}, as.AnalysisCheck{Name: "web", Web: &as.WebCheck{URL: srv.URL}}, metav1.Now())
	assert.True(t, m.OK, "allowed by the platform: %+v", m)
	assert.Equal(t, int32(1), hits.Load())
}
