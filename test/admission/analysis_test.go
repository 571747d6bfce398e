//go:build !unit

package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// TestAnalysisIsValidatedByTheCRD: the shapes of analysis checks the API
// server checks (one kind per check, operators, intervals, counts, URLs).
func TestAnalysisIsValidatedByTheCRD(t *testing.T) {
	ctx := context.Background()
	ns := approverNamespace(t)
	env := func(checks ...as.AnalysisCheck) *as.Environment {
		return &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "env-"}, Spec: as.EnvironmentSpec{Analysis: &as.AnalysisPolicy{Checks: checks}}}
	}
	le := as.AnalysisCondition{Operator: "<=", Value: "0.01"}
	prom := func(mut func(*as.AnalysisCheck)) as.AnalysisCheck {
		c := as.AnalysisCheck{Name: "error-rate", Prometheus: &as.PrometheusCheck{Address: "https://prometheus.example.test", Query: "sum(rate(x[1m]))", SuccessCondition: le}}
		if mut != nil {
			mut(&c)
		}
		return c
	}
	web := as.AnalysisCheck{Name: "ready", Web: &as.WebCheck{URL: "https://shop.example.test/healthz", JSONField: "status.db", SuccessCondition: &as.AnalysisCondition{Operator: "==", Value: "ok"}}}
	admitted := map[string]*as.Environment{
		"a Prometheus check": env(prom(func(c *as.AnalysisCheck) {
			c.Interval, c.InitialDelay, c.Count, c.FailureLimit = &metav1.Duration{Duration: time.Minute}, &metav1.Duration{Duration: 0}, 5, 1
		})),
		"a web check and a Prometheus check": env(web, prom(nil)),
		"a web check of the status only":     env(as.AnalysisCheck{Name: "up", Web: &as.WebCheck{URL: "http://shop.example.test", ExpectedStatus: 204}}),
	}
	for name, e := range admitted {
		assert.NoError(t, k8s.Create(ctx, e), name)
	}
	refused := map[string]struct {
		e   *as.Environment
		msg string
	}{
		"neither kind":     {env(as.AnalysisCheck{Name: "x"}), "exactly one of prometheus and web"},
		"both kinds":       {env(as.AnalysisCheck{Name: "x", Prometheus: prom(nil).Prometheus, Web: web.Web}), "exactly one of prometheus and web"},
		"an operator":      {env(prom(func(c *as.AnalysisCheck) { c.Prometheus.SuccessCondition.Operator = "=~" })), "operator"},
		"a busy interval":  {env(prom(func(c *as.AnalysisCheck) { c.Interval = &metav1.Duration{Duration: time.Second} })), "between 5s and 24h"},
		"too many counts":  {env(prom(func(c *as.AnalysisCheck) { c.Count = 101 })), "count"},
		"a file URL":       {env(as.AnalysisCheck{Name: "x", Web: &as.WebCheck{URL: "file:///etc/passwd"}}), "url"},
		"a field alone":    {env(as.AnalysisCheck{Name: "x", Web: &as.WebCheck{URL: "https://x.example.test", JSONField: "a"}}), "jsonField needs a successCondition"},
		"a name with dots": {env(prom(func(c *as.AnalysisCheck) { c.Name = "a.b" })), "name"},
		"two of one name":  {env(prom(nil), prom(nil)), "Duplicate value"},
	}
	for name, c := range refused {
		err := k8s.Create(ctx, c.e)
		if assert.Error(t, err, name) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", name, err)
			assert.Contains(t, err.Error(), c.msg, name)
		}
	}
}
