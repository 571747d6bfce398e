package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/binding"
)

// TestPluginShowsAnalysis: with real Argo CD deploying, a promotion into an
// Environment with a web check is verified only after the check's count of
// measurements against a real HTTP server; `argocd gitops promote` prints
// the check as it follows the run, and `argocd gitops status` of the binding
// prints its result.
func TestPluginShowsAnalysis(t *testing.T) {
	ctx := context.Background()
	ns := tenantNamespace(t)
	user := "dev-" + rand.String(4)
	bindClusterRole(t, ns, user, "edit")
	applyTenantRoles(t)
	kc := userKubeconfig(t, user, ns)
	appWithComponents(t, ns, "base")
	var hits atomic.Int32
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	defer web.Close()
	require.NoError(t, k8s.Create(ctx, &as.Environment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}, Spec: as.EnvironmentSpec{
		DeploymentStrategy: as.DeploymentStrategyManual,
		Analysis: &as.AnalysisPolicy{Checks: []as.AnalysisCheck{{Name: "ready", Interval: &metav1.Duration{Duration: 5 * time.Second}, Count: 2,
			Web: &as.WebCheck{URL: web.URL + "/healthz", JSONField: "status", SuccessCondition: &as.AnalysisCondition{Operator: "==", Value: "ok"}}}}}}}))
	require.NoError(t, k8s.Create(ctx, snapshotOf(ns, "snap-1", "v1")))

	out, code := gitops(t, kc, "promote", "snap-1", "--to", "dev")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "analysis ready: Running")
	assert.Contains(t, out, "next check at")
	assert.Contains(t, out, "analysis ready: Successful, value ok, 2 ok, 0 failed")
	assert.Contains(t, out, "step 1 dev: success")
	assert.GreaterOrEqual(t, hits.Load(), int32(2))

	out, code = gitops(t, kc, "status", binding.GeneratedName("appa", "dev"))
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Analysis:")
	assert.Contains(t, out, "Check ready:")
	assert.Contains(t, out, "Successful, value ok, 2 ok, 0 failed: status is \"ok\"; last check at")
}
