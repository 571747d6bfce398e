package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"
)

// monitoring is the install component with the dashboard and the alerts.
const monitoring = "../../manifests/install/components/monitoring"

// providedByPrometheus are the names the dashboard and the alerts may use that
// Prometheus itself makes for every target.
var providedByPrometheus = []string{"up"}

// TestManifestsUseOnlyOurMetrics checks that every metric named by the
// Grafana dashboard and the PrometheusRule is one our code registers.
func TestManifestsUseOnlyOurMetrics(t *testing.T) {
	known := registeredNames(t)
	exprs := map[string]string{}
	for where, e := range dashboardExprs(t) {
		exprs["dashboard "+where] = e
	}
	for where, e := range alertExprs(t) {
		exprs["alert "+where] = e
	}
	if len(exprs) < 10 {
		t.Fatalf("only %d expressions found in the dashboard and the alerts: %v", len(exprs), exprs)
	}
	used := map[string]bool{}
	for where, e := range exprs {
		if err := balanced(e); err != nil {
			t.Errorf("%s: %q: %v", where, e, err)
		}
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, e)
		}
		for _, n := range names {
			used[n] = true
			if !known[n] {
				t.Errorf("%s: %q uses %s, which our code does not register", where, e, n)
			}
		}
	}
	// Every metric of ours is on the dashboard (a suffix of a histogram will do).
	for n := range known {
		if slices.Contains(providedByPrometheus, n) || strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_bucket") || strings.HasSuffix(n, "_count") {
			continue
		}
		if !used[n] && !used[n+"_bucket"] && !used[n+"_count"] {
			t.Errorf("%s is on neither the dashboard nor in an alert", n)
		}
	}
}

// registeredNames registers our collectors on a fresh registry (as Register
// does on controller-runtime's) and returns the names they describe, with a
// histogram's series names and Prometheus's own.
func registeredNames(t *testing.T) map[string]bool {
	reg := prometheus.NewPedanticRegistry()
	cs := append(Collectors(), NewBuildInfo("v", "go", "r"))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatalf("registering %T: %v", c, err)
		}
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	known := map[string]bool{}
	for _, n := range providedByPrometheus {
		known[n] = true
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		known[m[1]] = true
		for _, h := range []*prometheus.HistogramVec{PromotionRunDuration, SyncRunDuration, HTTPRequestDuration, LeadTime, TimeToRestore} {
			hd := make(chan *prometheus.Desc, 1)
			h.Describe(hd)
			if (<-hd).String() == d.String() {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					known[m[1]+s] = true
				}
			}
		}
	}
	return known
}

func dashboardExprs(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(monitoring, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			out[p.Title+"#"+string(rune('A'+i))] = tg.Expr
		}
	}
	return out
}

func alertExprs(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(monitoring, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					For         string            `json:"for"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if r.APIVersion != "monitoring.coreos.com/v1" || r.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %s %s", r.APIVersion, r.Kind)
	}
	out := map[string]string{}
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert == "" || rule.Labels["severity"] == "" || rule.Annotations["summary"] == "" {
				t.Errorf("alert %q needs a name, a severity and a summary", rule.Alert)
			}
			out[rule.Alert] = rule.Expr
		}
	}
	return out
}

// PromQL, as far as finding metric names needs it. (The PromQL parser,
// github.com/prometheus/prometheus, is not a dependency of this module.)
var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlToken    = regexp.MustCompile(`[0-9][0-9A-Za-z_.]*|[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames are the metric names in a PromQL expression: identifiers that
// are not functions, keywords, label names or numbers.
func metricNames(expr string) []string {
	e := promqlString.ReplaceAllString(expr, `""`)
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRange.ReplaceAllString(e, " ")
	e = promqlGrouping.ReplaceAllString(e, " ")
	set := map[string]bool{}
	for _, tok := range promqlToken.FindAllString(e, -1) {
		if tok[0] >= '0' && tok[0] <= '9' || strings.HasSuffix(tok, "(") {
			continue
		}
		tok = strings.TrimSpace(tok)
		if slices.Contains(promqlKeywords, strings.ToLower(tok)) {
			continue
		}
		set[tok] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// balanced checks that brackets nest and quotes close: a typo check, the
// most a test without the PromQL parser can do.
func balanced(expr string) error {
	e := promqlString.ReplaceAllString(expr, `""`)
	if strings.ContainsAny(e, `"'`+"`") && strings.Count(e, `""`)*2 != strings.Count(e, `"`) {
		return errString("an unclosed quote")
	}
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for _, r := range e {
		switch r {
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return errString("unbalanced " + string(r))
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		return errString("unclosed " + string(stack[len(stack)-1]))
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="gitops-service-metrics"} == 0 or absent(up{job="x"})`, []string{"up"}},
		{`sum by (kind, reason) (rate(gitops_service_warning_events_total[$__rate_interval]))`, []string{"gitops_service_warning_events_total"}},
		{`histogram_quantile(0.9, sum by (le) (rate(a_bucket{x=~"5..|401"}[6h]))) > 600`, []string{"a_bucket"}},
		{`sum(a{b="c"}) / on(job) group_left(version) b offset 5m > 1e3 unless c`, []string{"a", "b", "c"}},
		{`sum(a{b="by (x) {y}"}) and bool d`, []string{"a", "d"}},
		{`sum without (pod) (x:recorded:rate5m)`, []string{"x:recorded:rate5m"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestBalanced(t *testing.T) {
	for expr, ok := range map[string]bool{
		`sum(rate(a[5m]))`:   true,
		`sum(a{b="(("})`:     true,
		`sum(rate(a[5m])`:    false,
		`sum(a{b="c"))`:      false,
		`a{b="c}`:            false,
		`sum(rate(a[5m)]))`:  false,
		`max by (x) (a) > 1`: true,
	} {
		if err := balanced(expr); (err == nil) != ok {
			t.Errorf("balanced(%q) = %v, want ok=%v", expr, err, ok)
		}
	}
}
