package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

func needHelm(t *testing.T) string {
	t.Helper()
	helm, err := stack.Helm()
	if err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the test stack's helm (hack/build-helm.sh):", err)
	}
	return helm
}

// A platform's values for Argo CD's chart: its own settings, another proxy
// extension (switched on, with the account proxyUser that uses it and the
// policy of proxyUserPolicy("metrics"); its backend's URL is replaced by the
// test's), the admin's RBAC and controller flags. The chart's
// redis-secret-init pre-install Job needs a kubelet, which the test stack has
// not: the platform provides Secret argocd-redis itself (the chart's
// documented alternative).
const platformValues = `redisSecretInit:
  enabled: false
configs:
  cm:
    url: https://argocd.example.com
    timeout.reconciliation: 240s
    extension.config.metrics: |
      services:
      - url: http://argocd-metrics-server:9003
    accounts.platform-user: login
  params:
    controller.status.processors: "30"
    server.insecure: true
    server.enable.proxy.extension: true
  rbac:
    policy.csv: |
      g, platform, role:admin
      p, platform-user, applications, get, platform/*, allow
      p, platform-user, extensions, invoke, metrics, allow
    policy.default: role:readonly
`

// metricsBackendURL is the other extension's backend in platformValues.
const metricsBackendURL = "http://argocd-metrics-server:9003"

// What platformValues puts into Argo CD's ConfigMaps.
var platformSettings = map[string]map[string]string{
	"argocd-cm": {
		"url":                      "https://argocd.example.com",
		"timeout.reconciliation":   "240s",
		"extension.config.metrics": "services:\n- url: http://argocd-metrics-server:9003\n",
		"accounts." + proxyUser:    "login",
	},
	"argocd-cmd-params-cm": {"controller.status.processors": "30", "server.insecure": "true", "server.enable.proxy.extension": "true"},
	"argocd-rbac-cm":       {"policy.csv": "g, platform, role:admin\n" + proxyUserPolicy("metrics"), "policy.default": "role:readonly"},
}

// The README's Helm block run verbatim against an Argo CD installed by its
// chart with a platform's values: our keys come from the values file, every
// key, label and Helm ownership mark of theirs stays, argocd-server (the
// stack's) answers GET /api/v1/settings; `helm upgrade` (Argo CD's upgrade
// path, here with a changed setting of the platform's) keeps ours, theirs
// and the key the sidecar writes at run time; re-applying ours changes none
// of Argo CD's objects; the uninstall removes exactly ours.
func TestHelmInstallPath(t *testing.T) {
	bins := needStack(t)
	helm := needHelm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-helm"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	chart, err := stack.UnpackArgoHelmChart(t.TempDir())
	require.NoError(t, err)
	// The other extension's backend is real, so that its route through argocd-server is checked.
	metrics := stack.StartExtensionBackend()
	defer metrics.Close()
	platformValues := strings.Replace(platformValues, metricsBackendURL, metrics.URL, 1)
	platformSettings["argocd-cm"]["extension.config.metrics"] = otherExtensionConfig(metrics)
	values := filepath.Join(t.TempDir(), "my-argocd-values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(platformValues), 0o644))
	replace := map[string]string{"argo/argo-cd": chart, "my-argocd-values.yaml": values}
	helmRun := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig, "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
	}

	// The platform's Argo CD, installed by its chart.
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-redis", Namespace: ns},
		Data:       map[string][]byte{"auth": []byte("redis-password")},
	}))
	helmRun("install", "argocd", chart, "-n", ns, "-f", values)
	seedProxyUser(t, ctx, kube, ns)
	cm := func(name string) *corev1.ConfigMap {
		t.Helper()
		var m corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m))
		return &m
	}
	theirsIntact := func(when string) {
		t.Helper()
		for name, data := range platformSettings {
			m := cm(name)
			for k, v := range data {
				assert.Equal(t, v, m.Data[k], "%s: %s %s", when, name, k)
			}
			assert.Equal(t, "argocd", m.Labels["app.kubernetes.io/part-of"], "%s: %s keeps the label Argo CD selects it by", when, name)
			assert.Equal(t, "Helm", m.Labels["app.kubernetes.io/managed-by"], "%s: %s", when, name)
			assert.Equal(t, "argocd", m.Annotations["meta.helm.sh/release-name"], "%s: %s stays Helm's", when, name)
		}
	}
	theirsIntact("installed")
	server := func() *appsv1.Deployment {
		t.Helper()
		var d appsv1.Deployment
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-server"}, &d))
		return &d
	}
	chartServer := server()

	// The README: the tokens, then the Helm block.
	runBlock(t, ctx, kube.Kubeconfig, helm, installBlock(t, "README.md", "tokens"), nil)
	helmBlock := installBlock(t, "README.md", "helm")
	runBlock(t, ctx, kube.Kubeconfig, helm, helmBlock, replace)

	want := ourSettings(t)
	oursPresent := func(when string) {
		t.Helper()
		for name, data := range want {
			m := cm(name)
			for k, v := range data {
				assert.Equal(t, v, m.Data[k], "%s: our %s %s", when, name, k)
			}
		}
	}
	oursPresent("after the Helm block")
	theirsIntact("after the Helm block")
	for name, data := range want {
		m := cm(name)
		for k := range data {
			assert.Contains(t, dataOwners(t, m, k), "helm", "%s %s comes from the chart's values", name, k)
		}
	}
	d := server()
	var installer *corev1.Container
	for i := range d.Spec.Template.Spec.InitContainers {
		if d.Spec.Template.Spec.InitContainers[i].Name == "extension-gitops-service" {
			installer = &d.Spec.Template.Spec.InitContainers[i]
		}
	}
	require.NotNil(t, installer, "the chart's extension installer for the panel")
	env := map[string]string{}
	for _, e := range installer.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "gitops-service", env["EXTENSION_NAME"])
	assert.Contains(t, env["EXTENSION_URL"], "/extension-gitops-service-")
	assert.Equal(t, chartServer.Spec.Selector, d.Spec.Selector, "argocd-server's selector is the chart's")
	assert.Equal(t, chartServer.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, chartServer.Spec.Template.Spec.Containers[0].Args, d.Spec.Template.Spec.Containers[0].Args)
	var sidecar appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service"}, &sidecar))
	assert.Contains(t, sidecar.Spec.Template.Spec.Containers[0].Args, "--argocd-settings=verify", "the chart owns Argo CD's settings: the sidecar only checks them")

	verifyReportsNothing(t, ctx, c, ns, "after the Helm block")

	// What the sidecar writes at run time: the tenants' RBAC key, with its own field manager.
	rt := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm", Namespace: ns},
		Data:       map[string]string{"policy.gitops-service.csv": "p, team-a, applications, get, team-a/*, allow\n"},
	}
	require.NoError(t, c.Patch(ctx, rt, client.Apply, client.FieldOwner("gitops-service"), client.ForceOwnership))

	// Argo CD reads what the chart and our values made.
	settings := func(when string) {
		t.Helper()
		s := argoCDServes(t, ctx, kube, ns, when, "metrics", metrics)
		assert.Equal(t, "https://argocd.example.com", s["url"], when)
	}
	settings("after the Helm block")

	// Argo CD's upgrade path: helm upgrade, with a setting of the platform's changed.
	require.NoError(t, os.WriteFile(values, []byte(strings.Replace(platformValues, "240s", "300s", 1)), 0o644))
	platformSettings["argocd-cm"]["timeout.reconciliation"] = "300s"
	runBlock(t, ctx, kube.Kubeconfig, helm, helmBlock, replace)
	oursPresent("after helm upgrade")
	theirsIntact("after helm upgrade")
	assert.Equal(t, rt.Data["policy.gitops-service.csv"], cm("argocd-rbac-cm").Data["policy.gitops-service.csv"], "helm upgrade keeps the sidecar's run-time key")
	verifyReportsNothing(t, ctx, c, ns, "after helm upgrade")
	settings("after helm upgrade")

	// Re-applying ours (our upgrade) changes none of Argo CD's objects.
	versions := func() []string {
		var out []string
		for _, name := range []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm"} {
			out = append(out, name+"@"+cm(name).ResourceVersion)
		}
		return append(out, "argocd-server@"+server().ResourceVersion)
	}
	before := versions()
	cmd := exec.CommandContext(ctx, bins.Kubectl, "apply", "--server-side", "-k", "manifests/helm")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, before, versions(), "re-applying manifests/helm touched Argo CD's objects")

	// Uninstall (docs/install-helm.md): exactly ours goes.
	runBlock(t, ctx, kube.Kubeconfig, helm, installBlock(t, "docs/install-helm.md", "helm-uninstall"), replace)
	theirsIntact("after the uninstall")
	for name, data := range want {
		m := cm(name)
		for k := range data {
			if _, theirs := platformSettings[name][k]; theirs {
				continue // the platform set it too (server.enable.proxy.extension): theirsIntact checked it stays
			}
			assert.NotContains(t, m.Data, k, "after the uninstall: our %s %s", name, k)
		}
	}
	assert.NotContains(t, cm("argocd-rbac-cm").Data, "policy.gitops-service.csv")
	d = server()
	assert.False(t, slices.ContainsFunc(d.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "extension-gitops-service" }))
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service"}, &appsv1.Deployment{})
	assert.True(t, apierrors.IsNotFound(err), "the sidecar's Deployment is gone: %v", err)
	for _, s := range []string{"argocd-secret", "argocd-redis"} {
		assert.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &corev1.Secret{}), "Argo CD's Secret %s stays", s)
	}
	settings("after the uninstall")
}
