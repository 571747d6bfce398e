package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/stack"
)

// sidecarMetrics scrapes the sidecar: name{sorted labels} -> value, where a
// histogram gives its _count.
func sidecarMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := side.ScrapeMetrics(context.Background())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			key := "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				out[name+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				out[name+key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name+key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// sumOf adds the series of name whose labels contain every one of labels.
func sumOf(ms map[string]float64, name string, labels ...string) float64 {
	var sum float64
	for k, v := range ms {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(k, l)
		}
		if match {
			sum += v
		}
	}
	return sum
}

// TestMetricsAfterAScenario: a sync, a refused SyncRun and a refused panel
// request show in the sidecar's own metrics with the right values. The e2e
// tests run one at a time, so the counters' increases are this test's.
func TestMetricsAfterAScenario(t *testing.T) {
	before := sidecarMetrics(t)
	ns := tenantNamespace(t)
	repo, _ := gitRepo(t, map[string]string{"app/cm.yaml": configMap("metered", "x")})
	gd := deploy(t, ns, "metered", repo.URL, "app", v1.GitOpsDeploymentSpecTypeManual, nil)
	waitStatus(t, gd, "OutOfSync", func(gd *v1.GitOpsDeployment) bool { return gd.Status.Sync.Status == v1.SyncStatusCodeOutOfSync })
	waitRun(t, syncRun(t, ns, "sync", "metered", ""), "Succeeded", func(r *v1.GitOpsDeploymentSyncRun) bool { return r.Status.Phase == v1.OperationSucceeded })
	waitStatus(t, gd, "Synced and Healthy", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status == v1.SyncStatusCodeSynced && gd.Status.Health.Status == v1.HealthStatusHealthy
	})
	waitRun(t, syncRun(t, ns, "refused", "does-not-exist", ""), "refused", func(r *v1.GitOpsDeploymentSyncRun) bool { return r.Status.Refused() })

	// The panel's backend without argocd-server's secret header: refused.
	resp, err := http.Get(side.UIProxyURL + "/api/v1/applications")
	require.NoError(t, err)
	resp.Body.Close()
	require.GreaterOrEqual(t, resp.StatusCode, 400)
	code := fmt.Sprintf(`code="%d"`, resp.StatusCode)

	var after map[string]float64
	increase := func(name string, labels ...string) float64 {
		return sumOf(after, name, labels...) - sumOf(before, name, labels...)
	}
	require.Eventually(t, func() bool {
		after = sidecarMetrics(t)
		return increase("gitops_service_syncrun_duration_seconds_count", `phase="Succeeded"`) >= 1 &&
			increase("gitops_service_warning_events_total", `kind="GitOpsDeploymentSyncRun"`) >= 1 &&
			(stack.ArgoCDMajor() != "3" || increase("gitops_service_argocd_redis_reads_total", `result="hit"`) >= 1)
	}, 30*time.Second, poll, "the sync and the refusal never showed in the metrics")

	assert.Equal(t, 1.0, increase("gitops_service_syncrun_duration_seconds_count", `phase="Succeeded"`), "finished SyncRuns observed")
	assert.Equal(t, 0.0, increase("gitops_service_syncrun_duration_seconds_count", `phase="Failed"`))
	assert.Equal(t, 1.0, increase("gitops_service_http_request_duration_seconds_count", `server="ui-proxy"`, code), "refused panel requests")
	assert.GreaterOrEqual(t, increase("gitops_service_warning_events_total", `kind="GitOpsDeploymentSyncRun"`), 1.0)
	// The states are the leader's cache at scrape time; other tests' CRs may
	// still be there, so at least ours.
	assert.GreaterOrEqual(t, sumOf(after, "gitops_service_gitopsdeployments", `health_status="Healthy"`, `sync_status="Synced"`), 1.0)
	assert.GreaterOrEqual(t, sumOf(after, "gitops_service_resources_with_error", `kind="GitOpsDeploymentSyncRun"`), 1.0)
	assert.GreaterOrEqual(t, sumOf(after, "gitops_service_syncruns", `phase="Succeeded"`), 1.0)
	assert.Equal(t, sumOf(after, "gitops_service_gitopsdeployments"), sumOf(after, "gitops_service_resources", `kind="GitOpsDeployment"`),
		"every GitOpsDeployment is counted once by its sync and health")
	if stack.ArgoCDMajor() == "3" {
		// Argo CD 3.x keeps per-resource health in Redis: the deployment's tree was read.
		assert.GreaterOrEqual(t, increase("gitops_service_argocd_redis_reads_total", `result="hit"`), 1.0, "Redis reads")
		assert.Equal(t, 0.0, increase("gitops_service_argocd_redis_reads_total", `result="error"`), "Redis read errors")
	}
}

// Issue 33, item 6: the metrics name every tenant's namespaces and figures,
// so the endpoint answers only callers the API server authorizes for get
// /metrics: not an unauthenticated call, not plain http, not a tenant's own
// ServiceAccount (admin of its namespace); the platform's Prometheus, bound
// to the shipped gitops-service-metrics-reader ClusterRole, reads them.
func TestMetricsOnlyForThePlatform(t *testing.T) {
	ctx := context.Background()
	ns := stack.Tenant(t, k8s).Name
	cs, err := kube.Clientset()
	require.NoError(t, err)
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)

	get := func(hc *http.Client, url string) (int, string) {
		t.Helper()
		resp, err := hc.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get(stack.MetricsClient(""), side.MetricsURL)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.NotContains(t, body, "gitops_service")
	code, body = get(stack.MetricsClient(tok.Status.Token), side.MetricsURL)
	assert.Equal(t, http.StatusForbidden, code, "a tenant's token")
	assert.NotContains(t, body, "gitops_service")
	code, body = get(stack.MetricsClient("not-a-token"), side.MetricsURL)
	// controller-runtime's filter: 500 "Authentication failed" for a token the API server does not know.
	assert.Contains(t, []int{http.StatusUnauthorized, http.StatusInternalServerError}, code)
	assert.NotContains(t, body, "gitops_service")
	// Plain http gets nothing either.
	code, body = get(&http.Client{Timeout: 5 * time.Second}, strings.Replace(side.MetricsURL, "https://", "http://", 1))
	assert.NotEqual(t, http.StatusOK, code)
	assert.NotContains(t, body, "gitops_service")

	resp, err := side.ScrapeMetrics(ctx)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), "gitops_service_build_info{")
}
