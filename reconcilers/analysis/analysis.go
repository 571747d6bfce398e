// Package analysis measures an Environment's analysis checks (Prometheus
// queries, HTTP requests) and folds the measurements into a check's result.
// Measuring is the only I/O (Measure); what a measurement means for a check
// (Record, Due, Verdict) is pure.
//
// The URLs are a tenant's and the requests go out from inside the platform's
// network: connections go through the egress policy (checked on the address
// dialled), credentials come from a Secret of the tenant's own namespace and
// are sent only over https to the host named, and what a server answers never
// reaches a status, an Event or a log: a measurement keeps the value it
// extracted and a verdict in fixed words.
package analysis

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/egress"
)

// Timeout bounds one measurement.
const Timeout = 10 * time.Second

// DefaultInterval is a check's interval when it names none.
const DefaultInterval = time.Minute

// maxValue bounds the value a measurement keeps, maxMessage its message
// (within the CRD's limits of a result's value and message).
const (
	maxValue   = 64
	maxMessage = 480
)

// cut shortens s to at most n bytes and a mark, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Measurement is one measurement of a check.
type Measurement struct {
	Time metav1.Time
	// OK: the value met the check's condition.
	OK bool
	// Value measured (a query's value, a JSON field's, an HTTP status), "" when none.
	Value string
	// Message says what was found, in fixed words and the value.
	Message string
}

// Access says how to reach a tenant's analysis servers.
type Access struct {
	// Namespace is the tenant's: credentials Secrets are read from it only.
	Namespace string
	// Egress refuses addresses a tenant may not make the sidecar reach (nil:
	// the fixed ranges refused).
	Egress *egress.Policy
	// Roots are the CAs trusted over https; nil: the system's.
	Roots *x509.CertPool
}

// Measure makes one measurement of check now. A measurement that cannot be
// made (a missing Secret, no answer) is a failed one that says why.
func Measure(ctx context.Context, reader client.Reader, a Access, check as.AnalysisCheck, now metav1.Time) Measurement {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	secret := ""
	switch {
	case check.Prometheus != nil:
		secret = check.Prometheus.CredentialsSecret
	case check.Web != nil:
		secret = check.Web.CredentialsSecret
	default:
		return failed(now, "the check names neither prometheus nor web")
	}
	creds, err := credentials(ctx, reader, a.Namespace, secret)
	if err != nil {
		return failed(now, "%s", err.Error())
	}
	var m Measurement
	if check.Prometheus != nil {
		m = queryPrometheus(ctx, a, *check.Prometheus, creds, now.Time)
	} else {
		m = getWeb(ctx, a, *check.Web, creds)
	}
	m.Time = now
	m.Value = cut(m.Value, maxValue)
	return m
}

func failed(now metav1.Time, format string, args ...any) Measurement {
	return Measurement{Time: now, Message: fmt.Sprintf(format, args...)}
}

// creds are what a credentials Secret holds.
type creds struct {
	user, password, token string
}

func (c *creds) empty() bool { return c == nil || (c.user == "" && c.password == "" && c.token == "") }

// credentials reads the Secret name of namespace ns (nil when name is empty).
// The error names the Secret and the keys expected, never a value.
func credentials(ctx context.Context, reader client.Reader, ns, name string) (*creds, error) {
	if name == "" {
		return nil, nil
	}
	var s corev1.Secret
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, fmt.Errorf("credentials Secret %q not found in namespace %s", name, ns)
		}
		return nil, fmt.Errorf("credentials Secret %q could not be read", name)
	}
	c := &creds{user: string(s.Data["username"]), password: string(s.Data["password"]), token: string(s.Data["token"])}
	if c.empty() {
		return nil, fmt.Errorf("credentials Secret %q has none of the keys username, password, token", name)
	}
	return c, nil
}

// authenticated sends creds with the requests to the host of the first one
// over https only: never to plain http, nor to another host or port a
// redirect leads to.
type authenticated struct {
	next  http.RoundTripper
	host  string
	creds *creds
}

func (t *authenticated) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.creds.empty() || req.URL.Scheme != "https" || req.URL.Host != t.host {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.creds.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.creds.token)
	} else {
		req.SetBasicAuth(t.creds.user, t.creds.password)
	}
	return t.next.RoundTrip(req)
}

// Interval is the check's interval.
func Interval(check as.AnalysisCheck) time.Duration {
	if check.Interval != nil && check.Interval.Duration > 0 {
		return check.Interval.Duration
	}
	return DefaultInterval
}

func count(check as.AnalysisCheck) int32 {
	if check.Count > 0 {
		return check.Count
	}
	return 1
}

// Start is a check's result before its first measurement: due its initial
// delay after deployed.
func Start(check as.AnalysisCheck, deployed metav1.Time) as.AnalysisCheckStatus {
	next := deployed
	if check.InitialDelay != nil {
		next = metav1.NewTime(deployed.Add(check.InitialDelay.Duration))
	}
	return as.AnalysisCheckStatus{Name: check.Name, Phase: as.AnalysisRunning, Message: "waiting for the first measurement", NextCheckTime: &next}
}

// Due says whether the check's next measurement is due at now.
func Due(st as.AnalysisCheckStatus, now time.Time) bool {
	return st.Phase == as.AnalysisRunning && (st.NextCheckTime == nil || !st.NextCheckTime.After(now))
}

// Record folds m into the check's result st: count successes pass it, one
// failure more than its limit fails it; otherwise the next measurement is
// due an interval after this one.
func Record(check as.AnalysisCheck, st as.AnalysisCheckStatus, m Measurement) as.AnalysisCheckStatus {
	if st.Phase != as.AnalysisRunning {
		return st
	}
	t := m.Time
	st.LastCheckTime, st.Value, st.Message = &t, cut(m.Value, maxValue), cut(m.Message, maxMessage)
	if m.OK {
		st.Successes++
	} else {
		st.Failures++
	}
	switch {
	case st.Failures > check.FailureLimit:
		st.Phase, st.NextCheckTime = as.AnalysisFailed, nil
	case st.Successes >= count(check):
		st.Phase, st.NextCheckTime = as.AnalysisSuccessful, nil
	default:
		next := metav1.NewTime(t.Add(Interval(check)))
		st.NextCheckTime = &next
	}
	return st
}

// Verdict is where the checks stand together: Failed when one failed (the
// first, for the message), Successful when each passed, else Running until
// next (the earliest next measurement).
func Verdict(results []as.AnalysisCheckStatus) (phase as.AnalysisPhase, failedCheck *as.AnalysisCheckStatus, next *time.Time) {
	phase = as.AnalysisSuccessful
	for i := range results {
		r := &results[i]
		switch r.Phase {
		case as.AnalysisFailed:
			return as.AnalysisFailed, r, nil
		case as.AnalysisRunning:
			phase = as.AnalysisRunning
			if r.NextCheckTime != nil && (next == nil || r.NextCheckTime.Time.Before(*next)) {
				t := r.NextCheckTime.Time
				next = &t
			}
		}
	}
	return phase, nil, next
}
