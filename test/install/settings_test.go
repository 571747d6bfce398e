package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// healthKeys are argocd-cm's health check keys of our CRDs by the file (of
// `make manifests`) that holds each one's Lua.
var healthKeys = map[string]string{
	"gitopsdeployment.lua":           "resource.customizations.health.managed-gitops.redhat.com_GitOpsDeployment",
	"gitopsdeploymentsyncrun.lua":    "resource.customizations.health.managed-gitops.redhat.com_GitOpsDeploymentSyncRun",
	"snapshotenvironmentbinding.lua": "resource.customizations.health.appstudio.redhat.com_SnapshotEnvironmentBinding",
	"promotionrun.lua":               "resource.customizations.health.appstudio.redhat.com_PromotionRun",
	"environment.lua":                "resource.customizations.health.appstudio.redhat.com_Environment",
	"deploymenttargetclaim.lua":      "resource.customizations.health.appstudio.redhat.com_DeploymentTargetClaim",
}

// healthDirs are where the generated health checks live (the sidecar's
// settings package, or the manifests' former settings component).
var healthDirs = []string{
	filepath.Join("reconcilers", "argocdsettings", "health"),
	filepath.Join("manifests", "install", "components", "argocd-settings", "health"),
}

// ourSettings are the keys the GitOps Service needs in each of Argo CD's
// ConfigMaps (ConfigMap name -> key -> value) with manifests/install's names:
// what the Helm values file and the ArgoCD snippet must give Argo CD.
func ourSettings(t *testing.T) map[string]map[string]string {
	t.Helper()
	cm := map[string]string{
		"extension.config.gitops-service": "services:\n- url: http://gitops-service-ui-proxy:8091\n  headers:\n  - name: Gitops-Service-Token\n    value: $gitops-service-ui-proxy:token\n",
	}
	var dir string
	for _, d := range healthDirs {
		if _, err := os.Stat(filepath.Join(repoRoot(t), d)); err == nil {
			dir = filepath.Join(repoRoot(t), d)
			break
		}
	}
	require.NotEmpty(t, dir, "the generated health checks in one of %v", healthDirs)
	for file, key := range healthKeys {
		lua, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		cm[key] = string(lua)
	}
	return map[string]map[string]string{
		"argocd-cm": cm,
		"argocd-cmd-params-cm": {
			"server.enable.proxy.extension":                           "true",
			"applicationsetcontroller.concurrent.reconciliations.max": "30",
			"applicationsetcontroller.k8s.client.qps":                 "150",
			"applicationsetcontroller.k8s.client.burst":               "300",
		},
		"argocd-rbac-cm": {"policy.gitops-service-admin.csv": "p, role:admin, extensions, invoke, gitops-service, allow\n"},
	}
}

// dataOwners are the field managers that own key of a ConfigMap's data.
func dataOwners(t *testing.T, m *corev1.ConfigMap, key string) []string {
	t.Helper()
	var owners []string
	for _, mf := range m.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		require.NoError(t, json.Unmarshal(mf.FieldsV1.Raw, &fields))
		if _, ok := fields["f:data"]["f:"+key]; ok {
			owners = append(owners, mf.Manager)
		}
	}
	return owners
}
