package install

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

// argoConfigMaps are Argo CD's ConfigMaps we write keys into.
var argoConfigMaps = []string{"argocd-cm", "argocd-cmd-params-cm", "argocd-rbac-cm"}

// cmState is what must survive us: a ConfigMap's data, labels, and which
// managers own each data key and label.
type cmState struct {
	Data, Labels map[string]string
	Owners       map[string][]string // "data/<key>" or "label/<key>" -> managers
}

func ownersOf(fields []metav1.ManagedFieldsEntry) map[string][]string {
	out := map[string][]string{}
	for _, f := range fields {
		if f.FieldsV1 == nil {
			continue
		}
		var set map[string]map[string]json.RawMessage
		_ = json.Unmarshal(f.FieldsV1.Raw, &set)
		for k := range set["f:data"] {
			out["data/"+strings.TrimPrefix(k, "f:")] = append(out["data/"+strings.TrimPrefix(k, "f:")], f.Manager)
		}
		var meta map[string]map[string]map[string]json.RawMessage
		_ = json.Unmarshal(f.FieldsV1.Raw, &meta)
		for k := range meta["f:metadata"]["f:labels"] {
			out["label/"+strings.TrimPrefix(k, "f:")] = append(out["label/"+strings.TrimPrefix(k, "f:")], f.Manager)
		}
	}
	return out
}

// Argo CD installed by its own install.yaml (client-side, as 2.x's docs say,
// and server-side, as 3.x's), with another extension's and the admin's keys,
// labels, flags, init container and volume; then us installed, Argo CD
// upgraded (install.yaml applied again), us upgraded and uninstalled: every
// pre-seeded item is intact at each step, ours are there while installed
// (back within the sidecar's 10 s after Argo CD's upgrade), and after the
// uninstall Argo CD's ConfigMaps and argocd-server are exactly as before we
// came, each key and label with the same owners.
func TestInstallIntoArgoCDsOwnInstall(t *testing.T) {
	bins := needStack(t)
	for _, version := range []string{stack.ArgoCDVersion2, stack.ArgoCDVersion3} {
		for _, mode := range []string{"client-side", "server-side"} {
			t.Run(version+"/"+mode, func(t *testing.T) { testInstallIntoArgoCD(t, bins, version, mode) })
		}
	}
}

func testInstallIntoArgoCD(t *testing.T, bins *stack.BinaryPaths, version, mode string) {
	installYAML, err := stack.ArgoCDInstallYAML(version)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-argocd"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kubectl := kubectlIn(ctx, t, bins, kube)
	applyArgoCD := func() {
		t.Helper()
		args := []string{"apply", "-n", ns, "-f", installYAML}
		if mode == "server-side" {
			args = []string{"apply", "-n", ns, "--server-side", "--force-conflicts", "-f", installYAML}
		}
		cmd := exec.CommandContext(ctx, bins.Kubectl, args...)
		cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kube.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil && mode == "client-side" && strings.Contains(string(out), "Too long: may not be more than 262144 bytes") {
			// Argo CD 3.x's CRDs exceed client-side apply's annotation: its docs install server-side only.
			t.Skipf("Argo CD %s's install.yaml cannot be applied client-side (its documented install is server-side):\n%s", version, out)
		}
		require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	applyArgoCD()

	// The admin's and another extension's settings, made the ways Argo CD's own upgrade keeps.
	// The other extension's backend is real, so that its route through argocd-server is checked.
	other := stack.StartExtensionBackend()
	defer other.Close()
	kubectl("-n", ns, "patch", "configmap", "argocd-cm", "--type", "merge", "-p", mergePatch(map[string]string{
		"extension.config.other": otherExtensionConfig(other),
		"accounts." + proxyUser:  "login",
		"timeout.reconciliation": "300s",
		"url":                    "https://argocd.example.com",
	}))
	kubectl("-n", ns, "label", "configmap", "argocd-cm", "example.com/team=platform")
	kubectl("-n", ns, "patch", "configmap", "argocd-cmd-params-cm", "--type", "merge", "-p",
		`{"data":{"controller.status.processors":"30","server.enable.proxy.extension":"true"}}`)
	kubectl("-n", ns, "patch", "configmap", "argocd-rbac-cm", "--type", "merge", "-p",
		mergePatch(map[string]string{"policy.csv": "g, platform, role:admin\n" + proxyUserPolicy("other")}))
	seedProxyUser(t, ctx, kube, ns)
	kubectl("-n", ns, "patch", "deployment", "argocd-server", "--type", "strategic", "--field-manager", "other-extension", "-p",
		`{"spec":{"template":{"spec":{"initContainers":[{"name":"extension-other","image":"quay.io/argoprojlabs/argocd-extension-installer:v0.0.9","volumeMounts":[{"name":"extensions","mountPath":"/tmp/extensions/"}]}],"volumes":[{"name":"extensions","emptyDir":{}}]}}}}`)

	state := func() map[string]cmState {
		out := map[string]cmState{}
		for _, name := range argoConfigMaps {
			var cm corev1.ConfigMap
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm))
			out[name] = cmState{Data: cm.Data, Labels: cm.Labels, Owners: ownersOf(cm.ManagedFields)}
		}
		return out
	}
	server := func() appsv1.Deployment {
		var d appsv1.Deployment
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-server"}, &d))
		return d
	}
	before, serverBefore := state(), server()
	require.Equal(t, "argocd", before["argocd-cm"].Labels["app.kubernetes.io/part-of"], "install.yaml labels argocd-cm")
	// Everything pre-seeded is still there, with its owner (ours may be added).
	intact := func(step string) {
		t.Helper()
		now := state()
		for name, b := range before {
			for k, v := range b.Data {
				assert.Equal(t, v, now[name].Data[k], "%s: %s %s", step, name, k)
			}
			for k, v := range b.Labels {
				assert.Equal(t, v, now[name].Labels[k], "%s: %s label %s", step, name, k)
			}
			for field, managers := range b.Owners {
				for _, m := range managers {
					assert.Contains(t, now[name].Owners[field], m, "%s: %s %s lost its owner %s", step, name, field, m)
				}
			}
		}
		d := server()
		require.NotNil(t, d.Spec.Selector, "%s: argocd-server's selector", step)
		assert.Equal(t, serverBefore.Spec.Selector, d.Spec.Selector, step)
		assert.Equal(t, serverBefore.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[0].Image, step)
		names := map[string]bool{}
		for _, ic := range d.Spec.Template.Spec.InitContainers {
			names[ic.Name] = true
		}
		assert.True(t, names["extension-other"], "%s: the other extension's init container", step)
	}
	ours := func(step, uiProxyURL string) {
		t.Helper()
		now := state()
		assert.Contains(t, now["argocd-cm"].Data["extension.config.gitops-service"], "url: "+uiProxyURL+"\n", step)
		assert.Contains(t, now["argocd-cm"].Data["resource.customizations.health.managed-gitops.redhat.com_GitOpsDeployment"], "return {status", step)
		assert.Equal(t, "300", now["argocd-cmd-params-cm"].Data["applicationsetcontroller.k8s.client.burst"], step)
		assert.Contains(t, now["argocd-rbac-cm"].Data["policy.gitops-service-admin.csv"], "extensions, invoke, gitops-service", step)
		var mounted bool
		for _, m := range server().Spec.Template.Spec.Containers[0].VolumeMounts {
			mounted = mounted || m.Name == "gitops-service-ui-extension"
		}
		assert.True(t, mounted, "%s: the panel's mount in argocd-server", step)
	}

	// Us, as documented: the Secrets once, the manifests, the panel's patch, the sidecar.
	for _, name := range []string{stack.GeneratorSecret, stack.UIProxySecret} {
		kubectl("-n", ns, "create", "secret", "generic", name, "--from-literal=token="+name+"-value")
		kubectl("-n", ns, "label", "secret", name, "app.kubernetes.io/part-of=argocd")
	}
	withUI := filepath.Join("test", "install", "testdata", "with-ui-extension")
	kubectl("apply", "--server-side", "-k", withUI)
	patchArgoCDServer(kubectl, ns, "manifests/install/components/ui-extension/argocd-server-patch.yaml")
	intact("after kubectl apply")
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Installed: true})
	require.NoError(t, err)
	defer func() { side.Close() }()
	require.NoError(t, stack.WaitForSidecarSettings(ctx, kube, ns, "argocd-cm", side.UIProxyURL, 30*time.Second))
	intact("installed")
	ours("installed", side.UIProxyURL)
	argoCDServes(t, ctx, kube, ns, "installed", "other", other)

	// Argo CD upgraded its documented way: ours survive or are back within the stated 10 s.
	applyArgoCD()
	intact("after Argo CD's upgrade")
	require.Eventually(t, func() bool {
		now := state()
		return strings.Contains(now["argocd-cm"].Data["extension.config.gitops-service"], side.UIProxyURL) &&
			now["argocd-cmd-params-cm"].Data["applicationsetcontroller.k8s.client.burst"] == "300" &&
			now["argocd-rbac-cm"].Data["policy.gitops-service-admin.csv"] != ""
	}, 12*time.Second, 200*time.Millisecond, "our keys are not back within 10 s of Argo CD's upgrade")
	ours("after Argo CD's upgrade", side.UIProxyURL)
	argoCDServes(t, ctx, kube, ns, "after Argo CD's upgrade", "other", other)

	// Our upgrade: the manifests again, a sidecar with another setting.
	side.Close()
	kubectl("apply", "--server-side", "-k", withUI)
	patchArgoCDServer(kubectl, ns, "manifests/install/components/ui-extension/argocd-server-patch.yaml")
	const v2URL = "http://gitops-service-ui-proxy-v2:8091"
	side, err = stack.StartSidecar(ctx, kube, stack.SidecarOptions{Installed: true, Args: []string{"--ui-proxy-url=" + v2URL}})
	require.NoError(t, err)
	require.NoError(t, stack.WaitForSidecarSettings(ctx, kube, ns, "argocd-cm", v2URL, 30*time.Second))
	intact("after our upgrade")
	ours("after our upgrade", v2URL)

	// Our uninstall, as docs/install.md and docs/operations.md say.
	side.Stop()
	out, err := exec.CommandContext(ctx, side.Bin, "remove-argocd-settings", "--kubeconfig", side.Kubeconfig(), "--argocd-namespace", ns).CombinedOutput()
	require.NoError(t, err, "%s", out)
	patchArgoCDServer(kubectl, ns, "manifests/install/components/ui-extension/argocd-server-unpatch.yaml")
	rendered := filepath.Join(t.TempDir(), "install.yaml")
	require.NoError(t, writeFile(rendered, kubectl("kustomize", withUI)))
	kubectl("delete", "-f", rendered, "--ignore-not-found", "-l", "app.kubernetes.io/name=gitops-service")
	kubectl("-n", ns, "delete", "secret", stack.GeneratorSecret, stack.UIProxySecret)
	after := state()
	for name, b := range before {
		assert.Equal(t, b.Data, after[name].Data, "uninstalled: %s's data", name)
		assert.Equal(t, b.Labels, after[name].Labels, "uninstalled: %s's labels", name)
		assert.Equal(t, b.Owners, after[name].Owners, "uninstalled: %s's owners", name)
	}
	assert.Equal(t, serverBefore.Spec, server().Spec, "uninstalled: argocd-server")
	// The other extension keeps working without us: the admin's server.enable.proxy.extension stays on.
	argoCDServes(t, ctx, kube, ns, "uninstalled", "other", other)
}

// mergePatch is a JSON merge patch of a ConfigMap's data.
func mergePatch(data map[string]string) string {
	b, _ := json.Marshal(map[string]any{"data": data})
	return string(b)
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
