package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/test/stack"
)

func needOperator(t *testing.T) {
	t.Helper()
	if _, err := stack.ArgoCDOperatorDir(); err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the Argo CD operator built by hack/build-argocd-operator.sh:", err)
	}
}

// The platform's ArgoCD resource: its own argocd-cm keys (another proxy
// extension, switched on by the platform, with the account proxyUser that
// uses it and the policy of proxyUserPolicy("metrics"); its backend's URL is
// replaced by the test's; its reconciliation timeout), a controller flag, its
// RBAC policy and an environment variable of argocd-server.
const platformArgoCD = `apiVersion: argoproj.io/v1beta1
kind: ArgoCD
metadata:
  name: argocd
  namespace: argocd
spec:
  extraConfig:
    timeout.reconciliation: 240s
    extension.config.metrics: |
      services:
      - url: http://argocd-metrics-server:9003
    accounts.platform-user: login
  cmdParams:
    controller.status.processors: "30"
    server.enable.proxy.extension: "true"
  rbac:
    policy: |
      g, platform, role:admin
      p, platform-user, applications, get, platform/*, allow
      p, platform-user, extensions, invoke, metrics, allow
    defaultPolicy: role:readonly
  server:
    extraCommandArgs:
    - --enable-proxy-extension
    env:
    - name: PLATFORM_SETTING
      value: kept
`

// poll calls check every half second until it returns nil or timeout passes,
// then fails the test with check's last error; it returns how long it took.
func poll(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < timeout && ctx.Err() == nil {
		if last = check(); last == nil {
			return time.Since(start)
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, last, "%s: not within %s", what, timeout)
	return time.Since(start)
}

// The README's operator block run verbatim against an Argo CD made by the Argo
// CD operator's real controller (built from ../shared/vendor/argocd-operator
// and run against the test stack's kube-apiserver): the operator writes our
// keys into argocd-cm and argocd-cmd-params-cm from the ArgoCD resource, and
// our flag, volume and mount into argocd-server; every setting of the
// platform's stays; the key the sidecar writes at run time and the admin key
// survive its reconciles; a key of ours removed by hand comes back by itself;
// the stack's argocd-server answers GET /api/v1/settings; the uninstall
// removes exactly ours.
func TestOperatorInstallPath(t *testing.T) {
	bins := needStack(t)
	needOperator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-operator"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	op, err := stack.StartArgoCDOperator(ctx, kube, ns)
	require.NoError(t, err)
	defer op.Stop()
	defer func() {
		if t.Failed() {
			t.Logf("operator log (last lines):\n%s", op.Tail(60))
		}
	}()

	// The other extension's backend is real, so that its route through argocd-server is checked.
	metrics := stack.StartExtensionBackend()
	defer metrics.Close()
	argocd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(strings.Replace(platformArgoCD, metricsBackendURL, metrics.URL, 1)), &argocd.Object))
	require.NoError(t, c.Create(ctx, argocd))
	cm := func(name string) (*corev1.ConfigMap, error) {
		var m corev1.ConfigMap
		return &m, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)
	}
	theirs := map[string]map[string]string{
		"argocd-cm":            {"timeout.reconciliation": "240s", "extension.config.metrics": otherExtensionConfig(metrics), "accounts." + proxyUser: "login"},
		"argocd-cmd-params-cm": {"controller.status.processors": "30", "server.enable.proxy.extension": "true"},
		"argocd-rbac-cm":       {"policy.csv": "g, platform, role:admin\n" + proxyUserPolicy("metrics"), "policy.default": "role:readonly"},
	}
	has := func(want map[string]map[string]string) error {
		for name, data := range want {
			m, err := cm(name)
			if err != nil {
				return err
			}
			for k, v := range data {
				if m.Data[k] != v {
					return fmt.Errorf("%s %s = %q, want %q", name, k, m.Data[k], v)
				}
			}
			if m.Labels["app.kubernetes.io/part-of"] != "argocd" {
				return fmt.Errorf("%s lost the label app.kubernetes.io/part-of=argocd: %v", name, m.Labels)
			}
		}
		return nil
	}
	server := func() (*appsv1.Deployment, error) {
		var d appsv1.Deployment
		return &d, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-server"}, &d)
	}
	serverEnvKept := func() error {
		d, err := server()
		if err != nil {
			return err
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(ctr.Env, corev1.EnvVar{Name: "PLATFORM_SETTING", Value: "kept"}) {
			return fmt.Errorf("argocd-server lost the platform's env PLATFORM_SETTING")
		}
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--enable-proxy-extension") {
			return fmt.Errorf("argocd-server lost the platform's --enable-proxy-extension: %v %v", ctr.Command, ctr.Args)
		}
		return nil
	}
	poll(t, ctx, 3*time.Minute, "the operator makes the platform's Argo CD", func() error {
		if err := has(theirs); err != nil {
			return err
		}
		return serverEnvKept()
	})
	poll(t, ctx, time.Minute, "the operator makes argocd-secret", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-secret"}, &corev1.Secret{})
	})
	seedProxyUser(t, ctx, kube, ns)

	// The README: the tokens, then the operator block.
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "README.md", "tokens"), nil)
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "README.md", "operator"), nil)

	want := ourSettings(t)
	took := poll(t, ctx, 2*time.Minute, "the operator writes our keys", func() error { return has(want) })
	t.Logf("our keys in Argo CD's ConfigMaps %s after the operator block", took)
	require.NoError(t, has(theirs), "the platform's settings after the operator block")
	serverFlags := func() error {
		d, err := server()
		if err != nil {
			return err
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--enable-proxy-extension") {
			return fmt.Errorf("argocd-server runs without --enable-proxy-extension: %v %v", ctr.Command, ctr.Args)
		}
		if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "gitops-service-ui-extension" && m.MountPath == "/tmp/extensions/gitops-service"
		}) {
			return fmt.Errorf("argocd-server has no mount of the panel: %v", ctr.VolumeMounts)
		}
		return serverEnvKept()
	}
	poll(t, ctx, 2*time.Minute, "argocd-server with our flag and the panel", serverFlags)
	poll(t, ctx, 2*time.Minute, "the applicationset controller's throughput", func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-applicationset-controller"}, &d); err != nil {
			return err
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(append(ctr.Command, ctr.Args...), "--concurrent-reconciliations=30") {
			return fmt.Errorf("applicationset controller without --concurrent-reconciliations=30: %v", ctr.Command)
		}
		for _, e := range []corev1.EnvVar{{Name: "ARGOCD_K8S_CLIENT_QPS", Value: "150"}, {Name: "ARGOCD_K8S_CLIENT_BURST", Value: "300"}} {
			if !slices.Contains(ctr.Env, e) {
				return fmt.Errorf("applicationset controller without %s=%s", e.Name, e.Value)
			}
		}
		return nil
	})
	var panel corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service-ui-extension"}, &panel), "the panel's JavaScript the ArgoCD mounts")
	assert.Contains(t, panel.Data["extension-gitops-service.js"], "gitops-service")
	var sidecar appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service"}, &sidecar))
	assert.Contains(t, sidecar.Spec.Template.Spec.Containers[0].Args, "--argocd-settings=verify", "the operator owns Argo CD's settings: the sidecar only checks them")
	// The sidecar reads Redis's password from the Secret the operator made.
	var redisRef *corev1.SecretKeySelector
	for _, e := range sidecar.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "REDIS_PASSWORD" && e.ValueFrom != nil {
			redisRef = e.ValueFrom.SecretKeyRef
		}
	}
	require.NotNil(t, redisRef, "the sidecar's REDIS_PASSWORD")
	var redisSecret corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: redisRef.Name}, &redisSecret), "the operator's Redis Secret")
	assert.NotEmpty(t, redisSecret.Data[redisRef.Key], "Secret %s key %s", redisRef.Name, redisRef.Key)

	verifyReportsNothing(t, ctx, c, ns, "after the operator block")
	argoCDServes(t, ctx, kube, ns, "after the operator block", "metrics", metrics)

	// What the sidecar writes at run time: the tenants' RBAC key, with its own field manager.
	rt := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-rbac-cm", Namespace: ns},
		Data:       map[string]string{"policy.gitops-service.csv": "p, team-a, applications, get, team-a/*, allow\n"},
	}
	require.NoError(t, c.Patch(ctx, rt, client.Apply, client.FieldOwner("gitops-service"), client.ForceOwnership))

	// The operator's reconcile after the platform changes its ArgoCD (its upgrade path): ours,
	// theirs, the admin key and the run-time key all stay.
	require.NoError(t, c.Patch(ctx, argocd, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"extraConfig":{"timeout.reconciliation":"300s"}}}`))))
	theirs["argocd-cm"]["timeout.reconciliation"] = "300s"
	poll(t, ctx, 2*time.Minute, "the operator applies the platform's change", func() error { return has(theirs) })
	require.NoError(t, has(want))
	rbac, err := cm("argocd-rbac-cm")
	require.NoError(t, err)
	assert.Equal(t, rt.Data["policy.gitops-service.csv"], rbac.Data["policy.gitops-service.csv"], "the operator keeps the sidecar's run-time key")
	require.NoError(t, serverFlags())
	verifyReportsNothing(t, ctx, c, ns, "after the operator's reconcile")

	// A key of ours removed by hand comes back by itself: the operator reverts argocd-cm.
	require.NoError(t, c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: ns}},
		client.RawPatch("application/merge-patch+json", []byte(`{"data":{"extension.config.gitops-service":null}}`))))
	took = poll(t, ctx, 2*time.Minute, "the operator restores our key", func() error { return has(want) })
	t.Logf("extension.config.gitops-service back %s after it was removed by hand", took)

	// Argo CD reads what the operator made.
	argoCDServes(t, ctx, kube, ns, "after the operator's reconcile", "metrics", metrics)

	// Re-applying ours (our upgrade) changes none of Argo CD's objects.
	versions := func() []string {
		var out []string
		for _, name := range []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm"} {
			m, err := cm(name)
			require.NoError(t, err)
			out = append(out, name+"@"+m.ResourceVersion)
		}
		d, err := server()
		require.NoError(t, err)
		return append(out, "argocd-server@"+d.ResourceVersion)
	}
	before := versions()
	cmd := exec.CommandContext(ctx, bins.Kubectl, "apply", "--server-side", "-k", "manifests/operator")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	time.Sleep(2 * time.Second) // what the operator would do about it
	assert.Equal(t, before, versions(), "re-applying manifests/operator touched Argo CD's objects")

	// Uninstall (docs/install-operator.md): exactly ours goes. The platform
	// had --enable-proxy-extension and server.enable.proxy.extension of its own
	// (the same as ours), so, as the docs say for such an ArgoCD, ours are
	// taken out by hand: the removal patch without those two.
	remove := removeOursKeepingPlatformProxy(t)
	runBlock(t, ctx, kube.Kubeconfig, "", installBlock(t, "docs/install-operator.md", "operator-uninstall"),
		map[string]string{"manifests/operator/remove-argocd-gitops-service.yaml": remove})
	poll(t, ctx, 2*time.Minute, "the operator removes our keys", func() error {
		for name, data := range want {
			m, err := cm(name)
			if err != nil {
				return err
			}
			for k := range data {
				if _, platforms := theirs[name][k]; platforms {
					continue // the platform set it too (server.enable.proxy.extension): has(theirs) checks it stays
				}
				if _, ok := m.Data[k]; ok {
					return fmt.Errorf("%s still has our %s", name, k)
				}
			}
		}
		m, err := cm("argocd-rbac-cm")
		if err != nil {
			return err
		}
		if _, ok := m.Data["policy.gitops-service.csv"]; ok {
			return fmt.Errorf("argocd-rbac-cm still has policy.gitops-service.csv")
		}
		d, err := server()
		if err != nil {
			return err
		}
		if strings.Contains(fmt.Sprint(d.Spec.Template.Spec), "gitops-service") {
			return fmt.Errorf("argocd-server still has something of ours: %v", d.Spec.Template.Spec.Volumes)
		}
		return nil
	})
	require.NoError(t, has(theirs), "the platform's settings after the uninstall")
	require.NoError(t, serverEnvKept())
	// The other extension keeps working without us.
	argoCDServes(t, ctx, kube, ns, "after the uninstall", "metrics", metrics)
}

// removeOursKeepingPlatformProxy writes manifests/operator's removal patch
// with the platform's own server.extraCommandArgs and
// server.enable.proxy.extension left alone (docs/install-operator.md: take
// our entries out by hand when the ArgoCD had them itself) and returns its
// path.
func removeOursKeepingPlatformProxy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(repoRoot(t) + "/manifests/operator/remove-argocd-gitops-service.yaml")
	require.NoError(t, err)
	var patch map[string]any
	require.NoError(t, yaml.Unmarshal(data, &patch))
	spec := patch["spec"].(map[string]any)
	server := spec["server"].(map[string]any)
	params := spec["cmdParams"].(map[string]any)
	require.Contains(t, server, "extraCommandArgs", "the removal patch takes out our --enable-proxy-extension")
	require.Contains(t, params, "server.enable.proxy.extension")
	delete(server, "extraCommandArgs")
	delete(params, "server.enable.proxy.extension")
	out, err := yaml.Marshal(patch)
	require.NoError(t, err)
	path := t.TempDir() + "/remove-argocd-gitops-service.yaml"
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return path
}
