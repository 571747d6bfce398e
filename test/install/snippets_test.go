package install

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, into))
}

// The Helm values file gives the chart exactly our keys, with the values the
// sidecar needs (the health checks as `make manifests` generated them).
func TestHelmValuesAreOurSettings(t *testing.T) {
	var v struct {
		Configs struct {
			CM     map[string]string `json:"cm"`
			Params map[string]string `json:"params"`
			RBAC   map[string]string `json:"rbac"`
		} `json:"configs"`
		Server struct {
			Extensions struct {
				Enabled       bool `json:"enabled"`
				ExtensionList []struct {
					Name string `json:"name"`
					Env  []struct{ Name, Value string }
				} `json:"extensionList"`
			} `json:"extensions"`
		} `json:"server"`
	}
	readYAML(t, "manifests/helm/values-gitops-service.yaml", &v)
	want := ourSettings(t)
	assert.Equal(t, want["argocd-cm"], v.Configs.CM)
	assert.Equal(t, want["argocd-cmd-params-cm"], v.Configs.Params)
	assert.Equal(t, want["argocd-rbac-cm"], v.Configs.RBAC)
	assert.True(t, v.Server.Extensions.Enabled)
	require.Len(t, v.Server.Extensions.ExtensionList, 1)
	env := map[string]string{}
	for _, e := range v.Server.Extensions.ExtensionList[0].Env {
		env[e.Name] = e.Value
	}
	// The same tarball as components/ui-extension-installer (make release fills in both).
	var installer struct {
		Spec struct {
			Template struct {
				Spec struct {
					InitContainers []struct {
						Env []struct{ Name, Value string }
					} `json:"initContainers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	patch := "manifests/install/components/ui-extension-installer/argocd-server-patch.yaml"
	if _, err := os.Stat(filepath.Join(repoRoot(t), patch)); err != nil {
		patch = "manifests/install/components/ui-extension-installer/argocd-server.yaml"
	}
	readYAML(t, patch, &installer)
	require.NotEmpty(t, installer.Spec.Template.Spec.InitContainers)
	for _, e := range installer.Spec.Template.Spec.InitContainers[0].Env {
		assert.Equal(t, e.Value, env[e.Name], "EXTENSION env %s as in components/ui-extension-installer", e.Name)
	}
}

// The ArgoCD snippet gives the operator exactly our argocd-cm and
// argocd-cmd-params-cm keys (their removal: extension/argocdoperator_test.go
// and TestOperatorInstallPath).
func TestArgoCDSnippetIsOurSettings(t *testing.T) {
	type spec struct {
		ExtraConfig map[string]*string `json:"extraConfig"`
		CmdParams   map[string]*string `json:"cmdParams"`
	}
	var add struct {
		Kind string `json:"kind"`
		Spec spec   `json:"spec"`
	}
	readYAML(t, "manifests/operator/argocd-gitops-service.yaml", &add)
	assert.Equal(t, "ArgoCD", add.Kind)
	want := ourSettings(t)
	deref := func(m map[string]*string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			require.NotNil(t, v, k)
			out[k] = *v
		}
		return out
	}
	assert.Equal(t, want["argocd-cm"], deref(add.Spec.ExtraConfig))
	assert.Equal(t, want["argocd-cmd-params-cm"], deref(add.Spec.CmdParams))
}
