// Package install tests manifests/install as a platform team uses it: rendered
// with kubectl's kustomize, in an overlay for another Argo CD namespace, and
// applied twice with `kubectl apply --server-side -k` into a real API server
// that already holds an Argo CD's settings.
package install

import (
	"context"
	"encoding/json"
	"fmt"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-service/gitops-service/test/stack"
)

func needStack(t *testing.T) *stack.BinaryPaths {
	t.Helper()
	b, err := stack.Binaries()
	if err != nil {
		if stack.Required() {
			t.Fatal(err)
		}
		t.Skip("needs the test stack's kubectl and kube-apiserver:", err)
	}
	return b
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := stack.RepoRoot()
	require.NoError(t, err)
	return root
}

// An overlay that only sets `namespace:` moves everything, the RBAC subjects
// and the URLs Argo CD calls included: nothing names "argocd" as a namespace.
func TestOverlayForAnotherArgoCDNamespace(t *testing.T) {
	needStack(t)
	r, err := stack.RenderKustomization(context.Background(), filepath.Join("testdata", "other-namespace"))
	require.NoError(t, err)
	const ns = "argo-prod"
	namespaced, bindings := 0, 0
	for _, u := range r.Objects {
		if u.GetNamespace() != "" {
			namespaced++
			assert.Equal(t, ns, u.GetNamespace(), "%s %s", u.GetKind(), u.GetName())
		}
		switch u.GetKind() {
		case "Deployment", "Service", "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "PodDisruptionBudget":
			assert.NotEmpty(t, u.GetNamespace(), "%s %s has no namespace", u.GetKind(), u.GetName())
		case "ClusterRoleBinding":
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] == "ServiceAccount" {
					assert.Equal(t, ns, s["namespace"], "ClusterRoleBinding %s", u.GetName())
				}
			}
		}
		if u.GetKind() == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				assert.Equal(t, ns, s.(map[string]any)["namespace"], "RoleBinding %s", u.GetName())
			}
		}
		if u.GetKind() == "CustomResourceDefinition" {
			continue
		}
		text := fmt.Sprint(u.Object)
		if u.GetKind() == "ValidatingAdmissionPolicyBinding" {
			// The admission policies' parameter: the sidecar's ServiceAccount of this namespace.
			// gitops-service-promotion-force needs none (it exempts no one).
			ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "paramRef")
			if !strings.HasPrefix(u.GetName(), "gitops-service-promotion-force.") {
				assert.Equal(t, map[string]string{"name": "gitops-service", "namespace": ns, "parameterNotFoundAction": "Deny"}, ref, "%s %s", u.GetKind(), u.GetName())
			} else {
				assert.Empty(t, ref, "%s %s", u.GetKind(), u.GetName())
			}
			bindings++
		}
		for _, hard := range []string{".argocd.svc", ".argocd:", "namespace:argocd", "serviceaccount:argocd:"} {
			assert.NotContains(t, text, hard, "%s %s names the argocd namespace", u.GetKind(), u.GetName())
		}
	}
	assert.Greater(t, namespaced, 10)
	assert.Equal(t, 4, bindings, "the approval, requester, environment-gates and promotion-force policies' bindings")
	d, err := r.Deployment("gitops-service")
	require.NoError(t, err)
	env := map[string]corev1.EnvVar{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e
	}
	require.Contains(t, env, "ARGOCD_NAMESPACE")
	assert.Equal(t, "metadata.namespace", env["ARGOCD_NAMESPACE"].ValueFrom.FieldRef.FieldPath, "the sidecar serves the Argo CD of its own namespace")
}

// The image `make image IMAGE=...` sets is the one the Deployment runs.
func TestImageEntry(t *testing.T) {
	needStack(t)
	r, err := stack.RenderKustomization(context.Background(), filepath.Join(repoRoot(t), "manifests", "install"))
	require.NoError(t, err)
	d, err := r.Deployment("gitops-service")
	require.NoError(t, err)
	assert.Equal(t, "gitops-service:dev", d.Spec.Template.Spec.Containers[0].Image)
	sc := d.Spec.Template.Spec.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.RunAsNonRoot, "the image's user is 65532")
}

// Applied twice into a namespace that already runs an Argo CD with settings of
// its own: the apply touches none of Argo CD's ConfigMaps, the installed
// sidecar writes our keys into them and nothing of Argo CD's is lost, the two
// token Secrets created beforehand (README) are kept, the second apply
// changes nothing at all (every object keeps its resourceVersion), and the
// uninstall leaves Argo CD's ConfigMaps exactly as they were before.
func TestApplyTwiceIntoAnExistingArgoCD(t *testing.T) {
	bins := needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	// What an Argo CD install already has (another proxy extension, the admin's policy).
	existing := map[string]map[string]string{
		"argocd-cm": {
			"url":                      "https://argocd.example.com",
			"extension.config":         "extensions:\n- name: metrics\n  backend:\n    services:\n    - url: http://argocd-metrics-server:9003\n",
			"extension.config.httpbin": "services:\n- url: http://httpbin.org\n",
		},
		"argocd-rbac-cm": {"policy.csv": "g, platform, role:admin\n", "policy.default": "role:readonly"},
		// The admin enabled proxy extensions before (for another extension):
		// it must stay on when we are uninstalled.
		"argocd-cmd-params-cm": {"server.insecure": "true", "server.enable.proxy.extension": "true"},
	}
	for name, data := range existing {
		require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}, Data: data}))
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bins.Kubectl, args...)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	// The README's "create once" commands.
	for _, name := range []string{stack.GeneratorSecret, stack.UIProxySecret} {
		kubectl("-n", ns, "create", "secret", "generic", name, "--from-literal=token="+name+"-value")
		kubectl("-n", ns, "label", "secret", name, "app.kubernetes.io/part-of=argocd")
	}

	kubectl("apply", "--server-side", "-k", "manifests/install")
	cm := func(name string) map[string]string {
		var m corev1.ConfigMap
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m))
		return m.Data
	}
	for name, data := range existing {
		assert.Equal(t, data, cm(name), "the apply touched Argo CD's %s", name)
	}

	r, err := stack.RenderKustomization(ctx, filepath.Join(repoRoot(t), "manifests", "install"))
	require.NoError(t, err)
	versions := func() map[string]string {
		out := map[string]string{}
		for _, u := range r.Objects {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(u), cur), "%s %s", u.GetKind(), u.GetName())
			out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = cur.GetResourceVersion()
		}
		for _, name := range []string{stack.GeneratorSecret, stack.UIProxySecret} {
			var s corev1.Secret
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s))
			assert.Equal(t, name+"-value", string(s.Data["token"]), "Secret %s never rotated", name)
			out["Secret/"+name] = s.ResourceVersion
		}
		return out
	}
	before := versions()
	kubectl("apply", "--server-side", "-k", "manifests/install")
	assert.Equal(t, before, versions(), "the second apply changed objects")
	// `kubectl diff` (a server-side dry run) agrees: exit 0, no differences.
	kubectl("diff", "--server-side", "-k", "manifests/install")

	// The installed sidecar writes our keys into Argo CD's ConfigMaps (it
	// needs Argo CD's CRDs to start).
	argoMod, err := stack.ArgoCDModuleDir()
	require.NoError(t, err)
	require.NoError(t, kube.InstallCRDs(ctx, filepath.Join(argoMod, "manifests", "crds")))
	side, err := stack.StartSidecar(ctx, kube, stack.SidecarOptions{Installed: true})
	require.NoError(t, err)
	defer side.Close()
	require.NoError(t, stack.WaitForSidecarSettings(ctx, kube, ns, "argocd-cm", side.UIProxyURL, 30*time.Second))
	for name, data := range existing {
		for k, v := range data {
			assert.Equal(t, v, cm(name)[k], "%s %s kept", name, k)
		}
	}
	assert.Equal(t, "true", cm("argocd-cmd-params-cm")["server.enable.proxy.extension"])
	assert.Equal(t, "30", cm("argocd-cmd-params-cm")["applicationsetcontroller.concurrent.reconciliations.max"])
	assert.Contains(t, cm("argocd-cm")["extension.config.gitops-service"], "$gitops-service-ui-proxy:token")
	assert.Contains(t, cm("argocd-cm")["resource.customizations.health.managed-gitops.redhat.com_GitOpsDeployment"], "return {status")
	assert.Contains(t, cm("argocd-rbac-cm")["policy.gitops-service-admin.csv"], "extensions, invoke, gitops-service")
	var labelled corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "argocd-cm"}, &labelled))
	assert.Equal(t, map[string]string{"app.kubernetes.io/part-of": "argocd"}, labelled.Labels, "argocd-cm's labels")

	// The uninstall (docs/install.md): the sidecar stopped (scaled to 0),
	// remove-argocd-settings as its ServiceAccount (manifests/uninstall's
	// Job), then our objects deleted.
	side.Stop()
	rm := exec.CommandContext(ctx, side.Bin, "remove-argocd-settings", "--kubeconfig", side.Kubeconfig(), "--argocd-namespace", ns)
	out, err := rm.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for name, data := range existing {
		assert.Equal(t, data, cm(name), "remove-argocd-settings left %s other than before the install", name)
	}
	// Again: nothing of ours is left, and that is no error.
	out, err = exec.CommandContext(ctx, side.Bin, "remove-argocd-settings", "--kubeconfig", side.Kubeconfig(), "--argocd-namespace", ns).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "no keys of ours")
	rendered := filepath.Join(t.TempDir(), "install.yaml")
	require.NoError(t, os.WriteFile(rendered, []byte(kubectl("kustomize", "manifests/install")), 0o644))
	kubectl("delete", "-f", rendered, "--ignore-not-found", "-l", "app.kubernetes.io/name=gitops-service")
	for _, u := range r.Objects {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(u), cur)
		switch u.GetName() {
		case "argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm":
			assert.NoError(t, err, "Argo CD's %s deleted by the uninstall", u.GetName())
		default:
			assert.True(t, apierrors.IsNotFound(err), "%s %s left by the uninstall (%v)", u.GetKind(), u.GetName(), err)
		}
	}
	assert.Equal(t, existing["argocd-cm"]["url"], cm("argocd-cm")["url"])
}

// The air-gapped UI extension component's patch merges its volume and mount into an
// existing argocd-server Deployment: Argo CD's own fields stay, and a second
// apply changes nothing.
func TestUIExtensionMergesIntoArgoCDServer(t *testing.T) {
	bins := needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-ui"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app.kubernetes.io/name": "argocd-server"}
	server := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-server", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "argocd-server", Image: "quay.io/argoproj/argocd:v3.5.1", Args: []string{"/usr/local/bin/argocd-server"},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
	require.NoError(t, c.Create(ctx, server))
	var original appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &original))
	kubectl := kubectlIn(ctx, t, bins, kube)
	const component = "manifests/install/components/ui-extension"
	apply := func() {
		t.Helper()
		kubectl("apply", "--server-side", "-k", filepath.Join("test", "install", "testdata", "with-ui-extension"))
		patchArgoCDServer(kubectl, ns, component+"/argocd-server-patch.yaml")
	}
	apply()
	var got appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &got))
	ctr := got.Spec.Template.Spec.Containers
	require.Len(t, ctr, 1)
	assert.Equal(t, "quay.io/argoproj/argocd:v3.5.1", ctr[0].Image)
	assert.Equal(t, []string{"/usr/local/bin/argocd-server"}, ctr[0].Args)
	assert.ElementsMatch(t, []corev1.VolumeMount{
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "gitops-service-ui-extension", MountPath: "/tmp/extensions/gitops-service", ReadOnly: true},
	}, ctr[0].VolumeMounts)
	names := []string{}
	for _, v := range got.Spec.Template.Spec.Volumes {
		names = append(names, v.Name)
	}
	assert.ElementsMatch(t, []string{"tmp", "gitops-service-ui-extension"}, names)
	var js corev1.ConfigMap
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitops-service-ui-extension"}, &js))
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "extension", "ui", "extension-gitops-service.js"))
	require.NoError(t, err)
	assert.Equal(t, string(src), js.Data["extension-gitops-service.js"], "the panel's current JavaScript")

	apply()
	var again appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &again))
	assert.Equal(t, got.ResourceVersion, again.ResourceVersion, "the second apply changed argocd-server")
	assert.Equal(t, got.Generation, again.Generation)
	assertOnlyPatchOwns(t, &again)

	// The uninstall's patch takes out exactly our volume and mount.
	patchArgoCDServer(kubectl, ns, component+"/argocd-server-unpatch.yaml")
	var after appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &after))
	assert.Equal(t, original.Spec, after.Spec, "the unpatch left argocd-server other than it was")
}

// kubectlIn runs the stack's kubectl against kube from the repository's root.
func kubectlIn(ctx context.Context, t *testing.T, bins *stack.BinaryPaths, kube *stack.Kube) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bins.Kubectl, args...)
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
}

// patchArgoCDServer is the documented patch of Argo CD's argocd-server
// (components/ui-extension*/argocd-server-patch.yaml's command).
func patchArgoCDServer(kubectl func(...string) string, ns, file string) {
	kubectl("-n", ns, "patch", "deployment", "argocd-server", "--type", "strategic", "--field-manager", "gitops-service", "--patch-file", file)
}

// assertOnlyPatchOwns: the patch left Argo CD's own fields (the selector,
// the replicas, argocd-server's image and args) with their owner; our manager
// owns only what the patch added.
func assertOnlyPatchOwns(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	for _, f := range d.ManagedFields {
		if f.Manager != "gitops-service" {
			continue
		}
		var set map[string]any
		require.NoError(t, json.Unmarshal(f.FieldsV1.Raw, &set))
		spec, _ := set["f:spec"].(map[string]any)
		for _, theirs := range []string{"f:selector", "f:replicas"} {
			assert.NotContains(t, spec, theirs, "the patch took over argocd-server's %s", theirs)
		}
		tmpl, _ := spec["f:template"].(map[string]any)
		podSpec, _ := tmpl["f:spec"].(map[string]any)
		containers, _ := podSpec["f:containers"].(map[string]any)
		server, _ := containers[`k:{"name":"argocd-server"}`].(map[string]any)
		for _, theirs := range []string{"f:image", "f:args", "f:command"} {
			assert.NotContains(t, server, theirs, "the patch took over argocd-server's container %s", theirs)
		}
	}
}
