package analysis

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

func cond(op as.AnalysisOperator, v string) as.AnalysisCondition {
	return as.AnalysisCondition{Operator: op, Value: v}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		value string
		cond  as.AnalysisCondition
		ok    bool
		err   string
	}{
		{"0.01", cond("<=", "0.05"), true, ""},
		{"0.05", cond("<=", "0.05"), true, ""},
		{"0.06", cond("<=", "0.05"), false, ""},
		{"0.05", cond("<", "0.05"), false, ""},
		{"1e2", cond(">", "99"), true, ""},
		{"100", cond("==", "1e2"), true, ""},
		{"3", cond("!=", "3"), false, ""},
		{"99", cond(">=", "99.5"), false, ""},
		{"NaN", cond("<", "1"), false, ""},
		{"NaN", cond("!=", "1"), true, ""},
		{"ok", cond("==", "ok"), true, ""},
		{"OK", cond("==", "ok"), false, ""},
		{"true", cond("!=", "false"), true, ""},
		{"ok", cond(">", "1"), false, `the value "ok" is not a number`},
		{"1", cond("<", "high"), false, "the condition's value \"high\" is not a number"},
		{"1", cond("=~", "1"), false, "unknown operator"},
	}
	for _, tc := range cases {
		ok, err := Compare(tc.value, tc.cond)
		assert.Equal(t, tc.ok, ok, "%s %s %s", tc.value, tc.cond.Operator, tc.cond.Value)
		if tc.err == "" {
			assert.NoError(t, err, "%s %s %s", tc.value, tc.cond.Operator, tc.cond.Value)
		} else if assert.Error(t, err) {
			assert.Contains(t, err.Error(), tc.err)
		}
	}
}

func TestField(t *testing.T) {
	doc := []byte(`{"status":{"ready":true,"ratio":0.25,"name":"ok","none":null,"checks":[{"healthy":"yes"}],"obj":{}}}`)
	cases := map[string]struct{ want, err string }{
		"status.ready":            {want: "true"},
		"status.ratio":            {want: "0.25"},
		"status.name":             {want: "ok"},
		"status.none":             {want: "null"},
		"status.checks.0.healthy": {want: "yes"},
		"status.checks.1.healthy": {err: "no field status.checks.1.healthy"},
		"status.missing":          {err: "no field status.missing"},
		"status.ready.deeper":     {err: "no field"},
		"status.obj":              {err: "an object or an array"},
	}
	for path, tc := range cases {
		got, err := Field(doc, path)
		if tc.err != "" {
			require.Error(t, err, path)
			assert.Contains(t, err.Error(), tc.err, path)
			continue
		}
		require.NoError(t, err, path)
		assert.Equal(t, tc.want, got, path)
	}
	_, err := Field([]byte("<html>secret page</html>"), "a")
	require.Error(t, err)
	assert.Equal(t, "the answer is not JSON", err.Error(), "nothing of the answer is repeated")
}

func at(sec int) metav1.Time { return metav1.NewTime(time.Date(2026, 3, 4, 10, 0, sec, 0, time.UTC)) }

func TestRecordCountsToTheCountAndTheFailureLimit(t *testing.T) {
	check := as.AnalysisCheck{Name: "errors", Interval: &metav1.Duration{Duration: 10 * time.Second}, Count: 3, FailureLimit: 1,
		InitialDelay: &metav1.Duration{Duration: 5 * time.Second}}
	st := Start(check, at(0))
	assert.Equal(t, as.AnalysisRunning, st.Phase)
	assert.Equal(t, at(5).Time, st.NextCheckTime.Time, "the first measurement after the initial delay")
	assert.False(t, Due(st, at(4).Time))
	assert.True(t, Due(st, at(5).Time))

	st = Record(check, st, Measurement{Time: at(5), OK: true, Value: "0.01"})
	assert.Equal(t, at(15).Time, st.NextCheckTime.Time, "the next an interval later")
	st = Record(check, st, Measurement{Time: at(15), Value: "0.5", Message: "0.5 is not <= 0.05"})
	assert.Equal(t, as.AnalysisRunning, st.Phase, "one failure is within the limit")
	st = Record(check, st, Measurement{Time: at(25), OK: true, Value: "0.02"})
	assert.Equal(t, as.AnalysisRunning, st.Phase)
	st = Record(check, st, Measurement{Time: at(35), OK: true, Value: "0.03"})
	assert.Equal(t, as.AnalysisSuccessful, st.Phase, "three successes")
	assert.Nil(t, st.NextCheckTime)
	assert.Equal(t, int32(3), st.Successes)
	assert.Equal(t, int32(1), st.Failures)
	assert.Equal(t, "0.03", st.Value)
	assert.Equal(t, at(35).Time, st.LastCheckTime.Time)
	assert.False(t, Due(st, at(100).Time), "an ended check is never due")
	assert.Equal(t, st, Record(check, st, Measurement{Time: at(45)}), "an ended check records nothing more")

	failing := Start(check, at(0))
	failing = Record(check, failing, Measurement{Time: at(5), Message: "connection refused"})
	failing = Record(check, failing, Measurement{Time: at(15), Message: "connection refused"})
	assert.Equal(t, as.AnalysisFailed, failing.Phase, "one failure more than the limit")
	assert.Nil(t, failing.NextCheckTime)
	assert.Equal(t, "connection refused", failing.Message)
}

// A result stays within the CRD's limits whatever was measured.
func TestRecordKeepsTheResultWithinTheCRDsLimits(t *testing.T) {
	long := strings.Repeat("é", 400)
	st := Record(as.AnalysisCheck{Name: "x", Count: 2}, Start(as.AnalysisCheck{Name: "x"}, at(0)), Measurement{Time: at(1), Value: long, Message: long})
	assert.LessOrEqual(t, len(st.Value), 128)
	assert.LessOrEqual(t, len(st.Message), 512)
	assert.True(t, utf8.ValidString(st.Value) && utf8.ValidString(st.Message), "cut on a rune boundary")
}

func TestVerdict(t *testing.T) {
	next1, next2 := at(10), at(20)
	running := func(n metav1.Time) as.AnalysisCheckStatus {
		return as.AnalysisCheckStatus{Name: "r", Phase: as.AnalysisRunning, NextCheckTime: &n}
	}
	ok := as.AnalysisCheckStatus{Name: "ok", Phase: as.AnalysisSuccessful}
	bad := as.AnalysisCheckStatus{Name: "bad", Phase: as.AnalysisFailed}

	phase, failed, next := Verdict([]as.AnalysisCheckStatus{ok, running(next2), running(next1)})
	assert.Equal(t, as.AnalysisRunning, phase)
	assert.Nil(t, failed)
	assert.Equal(t, next1.Time, *next, "the earliest next measurement")

	phase, failed, _ = Verdict([]as.AnalysisCheckStatus{running(next1), bad})
	assert.Equal(t, as.AnalysisFailed, phase, "one failed check fails the analysis at once")
	assert.Equal(t, "bad", failed.Name)

	phase, _, next = Verdict([]as.AnalysisCheckStatus{ok, ok})
	assert.Equal(t, as.AnalysisSuccessful, phase)
	assert.Nil(t, next)
}

func TestJudgeSamples(t *testing.T) {
	le := cond("<=", "0.05")
	m := judgeSamples(&model.Scalar{Value: 0.01}, le)
	assert.True(t, m.OK)
	assert.Equal(t, "0.01", m.Value)

	m = judgeSamples(model.Vector{{Value: 0.01}, {Value: 0.2}, {Value: 0.3}}, le)
	assert.False(t, m.OK, "every sample must meet the condition")
	assert.Equal(t, "0.2", m.Value, "the first that fails")
	assert.Equal(t, "0.2 is not <= 0.05", m.Message)

	m = judgeSamples(model.Vector{{Value: 0.01}, {Value: 0.02}}, le)
	assert.True(t, m.OK)
	assert.Equal(t, "2 samples <= 0.05", m.Message)

	m = judgeSamples(model.Vector{}, le)
	assert.False(t, m.OK)
	assert.Equal(t, "the query returned no sample", m.Message)

	m = judgeSamples(model.Matrix{}, le)
	assert.False(t, m.OK)
	assert.Contains(t, m.Message, "not a scalar or an instant vector")
}

func TestJudgeAnswer(t *testing.T) {
	body := []byte(`{"status":"degraded","errors":12,"password":"hunter2"}`)
	m := judgeAnswer(as.WebCheck{}, 200, body)
	assert.True(t, m.OK, "200 is expected when unset")
	m = judgeAnswer(as.WebCheck{ExpectedStatus: 204}, 200, body)
	assert.False(t, m.OK)
	assert.Equal(t, "HTTP status 200, expected 204", m.Message)

	field := func(path string, c as.AnalysisCondition) as.WebCheck {
		return as.WebCheck{JSONField: path, SuccessCondition: &c}
	}
	m = judgeAnswer(field("status", cond("==", "ok")), 200, body)
	assert.False(t, m.OK)
	assert.Equal(t, "degraded", m.Value)
	assert.Equal(t, `status is "degraded", not == ok`, m.Message)
	m = judgeAnswer(field("errors", cond("<", "20")), 200, body)
	assert.True(t, m.OK)
	assert.Equal(t, "12", m.Value)
	m = judgeAnswer(field("nothing", cond("==", "x")), 200, body)
	assert.False(t, m.OK)
	assert.NotContains(t, m.Message, "hunter2", "the rest of the answer is never repeated")
	m = judgeAnswer(as.WebCheck{JSONField: "status"}, 200, body)
	assert.False(t, m.OK, "a field without a condition passes nothing")
}

// The credentials go to the check's host over https only: not over plain
// http, not to another host a redirect leads to.
func TestCredentialsGoOnlyToTheHostOverHTTPS(t *testing.T) {
	var got []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
	})
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	plain := httptest.NewServer(handler)
	defer plain.Close()
	tr := secure.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
	u, _ := url.Parse(secure.URL)
	c := &http.Client{Transport: &authenticated{next: tr, host: u.Host, creds: &creds{token: "t0ken"}}}
	for _, target := range []string{secure.URL, plain.URL} {
		resp, err := c.Get(target)
		require.NoError(t, err)
		resp.Body.Close()
	}
	p, _ := url.Parse(plain.URL)
	assert.Equal(t, []string{u.Host + " Bearer t0ken", p.Host + " "}, got)

	m := getWeb(t.Context(), Access{}, as.WebCheck{URL: plain.URL}, &creds{user: "u", password: "p"})
	assert.Equal(t, "credentials are only sent over https", m.Message)
	m = queryPrometheus(t.Context(), Access{}, as.PrometheusCheck{Address: plain.URL, Query: "up"}, &creds{token: "t"}, time.Now())
	assert.Equal(t, "credentials are only sent over https", m.Message)
}
