package install

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-service/gitops-service/test/stack"
)

// The opt-in monitoring component builds with the install (and the
// ServiceMonitor it goes with): the alerts and the dashboard's ConfigMap,
// labelled for Grafana's dashboard sidecar, holding dashboard.json as it is.
func TestMonitoringComponentRenders(t *testing.T) {
	needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, err := stack.RenderInstall(ctx, t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, base.Find("PrometheusRule"), "the alerts are opt-in")

	r, err := stack.RenderInstall(ctx, t.TempDir(), "components/servicemonitor", "components/monitoring")
	require.NoError(t, err)
	assert.Len(t, r.Objects, len(base.Objects)+3, "the ServiceMonitor, the PrometheusRule and the dashboard's ConfigMap")
	require.Len(t, r.Find("ServiceMonitor"), 1)
	// The sidecar answers only authorized callers over https: the
	// ServiceMonitor scrapes so, with its Prometheus' token.
	endpoints, _, _ := unstructured.NestedSlice(r.Find("ServiceMonitor")[0].Object, "spec", "endpoints")
	require.Len(t, endpoints, 1)
	ep := endpoints[0].(map[string]any)
	assert.Equal(t, "https", ep["scheme"])
	assert.Equal(t, "/var/run/secrets/kubernetes.io/serviceaccount/token", ep["bearerTokenFile"])
	var readers int
	for _, cr := range r.Find("ClusterRole") {
		if cr.GetName() == "gitops-service-metrics-reader" {
			readers++
			rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
			assert.Equal(t, []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}, rules)
		}
	}
	assert.Equal(t, 1, readers, "the install ships ClusterRole gitops-service-metrics-reader")
	rules := r.Find("PrometheusRule")
	require.Len(t, rules, 1)
	assert.Equal(t, "monitoring.coreos.com/v1", rules[0].GetAPIVersion())
	var dashboard map[string]string
	for _, cm := range r.Find("ConfigMap") {
		if cm.GetName() == "gitops-service-dashboard" {
			assert.Equal(t, "1", cm.GetLabels()["grafana_dashboard"])
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			dashboard = data
		}
	}
	require.NotNil(t, dashboard, "no ConfigMap gitops-service-dashboard")
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(root, "manifests", "install", "components", "monitoring", "dashboard.json"))
	require.NoError(t, err)
	assert.Equal(t, string(want), dashboard["gitops-service.json"])
}
