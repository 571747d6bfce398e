package install

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

// --argocd-settings=verify (Argo CD installed by Helm or its operator, which
// own the ConfigMaps): the installed sidecar writes nothing, and names the
// missing and different keys in a Warning Event on its Pod and in the metric
// gitops_service_argocd_settings_missing; it is ready all the same.
func TestVerifyModeWritesNothingAndReports(t *testing.T) {
	needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-verify"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	argoMod, err := stack.ArgoCDModuleDir()
	require.NoError(t, err)
	require.NoError(t, kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds"), filepath.Join(repoRoot(t), "manifests", "crd")))
	// What a Helm install with part of our values set has: the proxy flag,
	// the applicationset concurrency tuned otherwise by the platform.
	existing := map[string]map[string]string{
		"argocd-cm":            {"url": "https://argocd.example.com"},
		"argocd-cmd-params-cm": {"server.enable.proxy.extension": "true", "applicationsetcontroller.concurrent.reconciliations.max": "50"},
		"argocd-rbac-cm":       {"policy.csv": "g, platform, role:admin\n"},
	}
	versions := map[string]string{}
	for name, data := range existing {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}, Data: data}
		require.NoError(t, c.Create(ctx, cm))
		versions[name] = cm.ResourceVersion
	}
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Installed: true, Args: []string{"--argocd-settings=verify", "--argocd-settings-interval=1s"}})
	require.NoError(t, err)
	defer side.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: stack.StackPodName, Namespace: ns}}
	stack.WaitForEvent(t, c, pod, corev1.EventTypeWarning, "ArgoCDSettingsMissing", "argocd-cm lacks extension.config.gitops-service", 30*time.Second)
	stack.WaitForEvent(t, c, pod, corev1.EventTypeWarning, "ArgoCDSettingsMissing", "argocd-cmd-params-cm sets applicationsetcontroller.concurrent.reconciliations.max to other values", 5*time.Second)

	resp, err := http.Get(side.MetricsURL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for _, line := range []string{
		`gitops_service_argocd_settings_missing{configmap="argocd-cm",key="extension.config.gitops-service",state="missing"} 1`,
		`gitops_service_argocd_settings_missing{configmap="argocd-rbac-cm",key="policy.gitops-service-admin.csv",state="missing"} 1`,
		`gitops_service_argocd_settings_missing{configmap="argocd-cmd-params-cm",key="applicationsetcontroller.concurrent.reconciliations.max",state="different"} 1`,
	} {
		assert.Contains(t, metrics, line)
	}
	assert.NotContains(t, metrics, `key="server.enable.proxy.extension"`, "a key set as we want it is not reported")
	time.Sleep(2 * time.Second) // two more checks
	for name, data := range existing {
		var cm corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm))
		assert.Equal(t, data, cm.Data, "verify wrote into %s", name)
		assert.Equal(t, versions[name], cm.ResourceVersion, "verify changed %s", name)
		for _, f := range cm.ManagedFields {
			assert.False(t, strings.HasPrefix(f.Manager, "gitops-service-settings"), "verify owns fields of %s", name)
		}
	}
}
