package e2e

import (
	"context"
	"fmt"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/gitops-service/gitops-service/api/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/reconcilers/argocd"
	"github.com/gitops-service/gitops-service/test/stack"
)

// deploymentManifest is a Deployment whose Pods run (RunPods) only when run is true.
func deploymentManifest(name string, run bool) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  progressDeadlineSeconds: 600
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s, %[2]s: "%[3]t"}
    spec:
      containers:
      - name: main
        image: registry.example.com/%[1]s:1
`, name, stack.PodRunLabel, run)
}

// Per-resource health is right with Argo CD's default settings on every
// version: 2.14 keeps it in status.resources, 3.x only in its resource tree.
func TestResourceHealthWithDefaultArgoCDSettings(t *testing.T) {
	ns := tenantNamespace(t)
	repo, sha := gitRepo(t, map[string]string{
		"app/web.yaml":     deploymentManifest("web", true),
		"app/stuck.yaml":   deploymentManifest("stuck", false),
		"app/service.yaml": service,
	})
	gd := deploy(t, ns, "health", repo.URL, "app", v1.GitOpsDeploymentSpecTypeAutomated, nil)

	health := func(gd *v1.GitOpsDeployment, kind, name string) *v1.HealthStatus {
		for _, r := range gd.Status.Resources {
			if r.Kind == kind && r.Name == name {
				return r.Health
			}
		}
		return nil
	}
	is := func(h *v1.HealthStatus, want v1.HealthStatusCode) bool { return h != nil && h.Status == want }
	got := waitStatus(t, gd, "Synced with per-resource health", func(gd *v1.GitOpsDeployment) bool {
		return gd.Status.Sync.Status == v1.SyncStatusCodeSynced && gd.Status.Sync.Revision == sha &&
			is(health(gd, "Deployment", "web"), v1.HealthStatusHealthy) &&
			is(health(gd, "Deployment", "stuck"), v1.HealthStatusProgressing) &&
			is(health(gd, "Service", "guestbook"), v1.HealthStatusHealthy)
	})
	assert.Equal(t, v1.HealthStatusProgressing, got.Status.Health.Status, "the stuck Deployment holds the Application back")
	assert.NotEmpty(t, health(got, "Deployment", "stuck").Message, "Argo CD's reason travels with the health")

	// Show which case ran: Argo CD 3.x keeps the health only in the tree.
	app := &argov1alpha1.Application{}
	require.NoError(t, k8s.Get(context.Background(), types.NamespacedName{Namespace: argo.Namespace, Name: argocd.ApplicationName(string(gd.UID))}, app))
	if stack.ArgoCDMajor() == "2" {
		assert.False(t, argocd.HealthInTree(app), "Argo CD 2.14 persists per-resource health in the Application")
	} else {
		require.True(t, argocd.HealthInTree(app), "Argo CD %s by default keeps per-resource health in its resource tree", stack.ArgoCDVersion)
		for _, r := range app.Status.Resources {
			assert.Nil(t, r.Health, "%s %s: health persisted in the Application after all", r.Kind, r.Name)
		}
	}
}
