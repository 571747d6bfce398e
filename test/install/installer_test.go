package install

import (
	"context"
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

// components/ui-extension-installer's patch merges argocd-extension-installer into
// an argocd-server that already installs another extension the same way (its
// init container and the shared `extensions` volume stay as they are); the
// init container downloads the tarball `make ui-extension-tarball` names for
// EXTENSION_VERSION; a second apply changes nothing.
func TestUIExtensionInstallerMergesIntoArgoCDServer(t *testing.T) {
	bins := needStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kube, err := stack.StartKube(ctx, stack.KubeOptions{Name: "install-ui-installer"})
	require.NoError(t, err)
	defer kube.Stop()
	c, err := client.New(kube.Config, client.Options{})
	require.NoError(t, err)
	const ns = "argocd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	labels := map[string]string{"app.kubernetes.io/name": "argocd-server"}
	extensions := corev1.VolumeMount{Name: "extensions", MountPath: "/tmp/extensions/"}
	metricsInstaller := corev1.Container{Name: "extension-metrics", Image: "quay.io/argoprojlabs/argocd-extension-installer:v0.0.9",
		Env:          []corev1.EnvVar{{Name: "EXTENSION_URL", Value: "https://example.com/metrics/extension.tar.gz"}},
		VolumeMounts: []corev1.VolumeMount{extensions}}
	server := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-server", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{metricsInstaller},
					Containers: []corev1.Container{{
						Name: "argocd-server", Image: "quay.io/argoproj/argocd:v3.5.1", Args: []string{"/usr/local/bin/argocd-server"},
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, extensions},
					}},
					Volumes: []corev1.Volume{
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "extensions", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	require.NoError(t, c.Create(ctx, server))
	var original appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &original))
	kubectl := kubectlIn(ctx, t, bins, kube)
	const component = "manifests/install/components/ui-extension-installer"
	apply := func() {
		t.Helper()
		kubectl("apply", "--server-side", "-k", filepath.Join("test", "install", "testdata", "with-ui-extension-installer"))
		patchArgoCDServer(kubectl, ns, component+"/argocd-server-patch.yaml")
	}
	apply()
	var got appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &got))
	spec := got.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	assert.Equal(t, "quay.io/argoproj/argocd:v3.5.1", spec.Containers[0].Image)
	assert.ElementsMatch(t, []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, extensions}, spec.Containers[0].VolumeMounts)
	require.Len(t, spec.Volumes, 2)
	require.Len(t, spec.InitContainers, 2)
	// A strategic merge patch puts a new list entry first; the installers are
	// independent (each unpacks its own extension), so the order does not matter.
	byName := map[string]corev1.Container{}
	for _, ic := range spec.InitContainers {
		byName[ic.Name] = ic
	}
	require.Contains(t, byName, metricsInstaller.Name)
	assert.Equal(t, metricsInstaller.Env, byName[metricsInstaller.Name].Env, "another extension's installer is left alone")
	assert.Equal(t, metricsInstaller.VolumeMounts, byName[metricsInstaller.Name].VolumeMounts, "another extension's installer is left alone")
	require.Contains(t, byName, "gitops-service-ui-extension")
	ours := byName["gitops-service-ui-extension"]
	assert.True(t, strings.HasPrefix(ours.Image, "quay.io/argoprojlabs/argocd-extension-installer:"), ours.Image)
	assert.Equal(t, []corev1.VolumeMount{extensions}, ours.VolumeMounts)
	env := map[string]string{}
	for _, e := range ours.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "gitops-service", env["EXTENSION_NAME"])
	require.NotEmpty(t, env["EXTENSION_VERSION"])
	// The file hack/uiextension writes for that version, and its checksums.txt beside it.
	tarball := "extension-gitops-service-" + env["EXTENSION_VERSION"] + ".tar.gz"
	assert.True(t, strings.HasSuffix(env["EXTENSION_URL"], "/"+env["EXTENSION_VERSION"]+"/"+tarball), env["EXTENSION_URL"])
	assert.Equal(t, strings.TrimSuffix(env["EXTENSION_URL"], tarball)+"checksums.txt", env["EXTENSION_CHECKSUM_URL"])

	apply()
	var again appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &again))
	assert.Equal(t, got.ResourceVersion, again.ResourceVersion, "the second apply changed argocd-server")
	assertOnlyPatchOwns(t, &again)

	// The uninstall's patch takes out our init container only; the shared
	// `extensions` volume and mount stay for the other extension.
	patchArgoCDServer(kubectl, ns, component+"/argocd-server-unpatch.yaml")
	var after appsv1.Deployment
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(server), &after))
	assert.Equal(t, original.Spec, after.Spec, "the unpatch left argocd-server other than it was")
}
