// Package argocdsettings writes, keeps and removes the keys the GitOps Service
// needs in Argo CD's ConfigMaps (argocd-cm, argocd-cmd-params-cm,
// argocd-rbac-cm), with server-side apply under its own field manager.
//
// Why not partial ConfigMaps applied by `kubectl apply --server-side`: on the
// first server-side apply to an object a client-side `kubectl apply` ever
// wrote, kubectl moves that ownership to the applying manager and the partial
// object then drops every field it omits (Argo CD's own keys, its labels); and
// an Argo CD upgrade applied with kubectl's default manager drops ours. A
// controller-runtime apply never migrates anyone's ownership: it owns exactly
// the keys it sends, co-owns a key another manager set to the same value (so
// removing ours never removes theirs), and applying an empty set later removes
// exactly the keys only we owned.
package argocdsettings

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

// FieldManager owns our keys. It is not the tenants' policy writer's
// (reconcilers/tenant, "gitops-service"): a server-side apply replaces
// everything its manager applied before, so two writers of one ConfigMap
// need two managers or each would remove the other's key.
const FieldManager = "gitops-service-settings"

// TenantPolicyFieldManager is reconcilers/tenant's manager of the tenants'
// policy.gitops-service.csv in argocd-rbac-cm, which the removal releases too.
const TenantPolicyFieldManager = "gitops-service"

// Names are the Argo CD objects and our own the settings name; the flags of
// the sidecar give them, with Argo CD's and manifests/install's defaults.
type Names struct {
	// ArgoCM, CmdParamsCM and RBACCM are Argo CD's ConfigMaps.
	ArgoCM, CmdParamsCM, RBACCM string
	// UIProxyURL is where argocd-server reaches our ui-proxy Service.
	UIProxyURL string
	// UIProxySecret holds the header value argocd-server adds (key "token"),
	// labelled app.kubernetes.io/part-of=argocd.
	UIProxySecret string
}

// DefaultNames are Argo CD's names and manifests/install's.
func DefaultNames() Names {
	return Names{
		ArgoCM:        "argocd-cm",
		CmdParamsCM:   "argocd-cmd-params-cm",
		RBACCM:        "argocd-rbac-cm",
		UIProxyURL:    "http://gitops-service-ui-proxy:8091",
		UIProxySecret: "gitops-service-ui-proxy",
	}
}

// Keys of our settings.
const (
	ExtensionConfigKey = "extension.config.gitops-service"
	ProxyExtensionKey  = "server.enable.proxy.extension"
	AdminPolicyKey     = "policy.gitops-service-admin.csv"
)

// AppSetParams tune the applicationset controller, which turns each
// SnapshotEnvironmentBinding's ApplicationSet into Applications. Its defaults
// (10 ApplicationSets at a time through a client limited to 50 requests/s,
// 100 burst) queue a release day: docs/performance.md, `make bench
// BENCH=Bindings`. Argo CD 2.14 maps only the first key from the ConfigMap.
var AppSetParams = map[string]string{
	"applicationsetcontroller.concurrent.reconciliations.max": "30",
	"applicationsetcontroller.k8s.client.qps":                 "150",
	"applicationsetcontroller.k8s.client.burst":               "300",
}

//go:embed health/*.lua
var healthFS embed.FS

// healthKinds maps each generated health script to its Argo CD key's
// <group>_<kind>.
var healthKinds = map[string]string{
	"gitopsdeployment.lua":           "managed-gitops.redhat.com_GitOpsDeployment",
	"gitopsdeploymentsyncrun.lua":    "managed-gitops.redhat.com_GitOpsDeploymentSyncRun",
	"snapshotenvironmentbinding.lua": "appstudio.redhat.com_SnapshotEnvironmentBinding",
	"promotionrun.lua":               "appstudio.redhat.com_PromotionRun",
	"environment.lua":                "appstudio.redhat.com_Environment",
	"deploymenttargetclaim.lua":      "appstudio.redhat.com_DeploymentTargetClaim",
}

// HealthChecks are argocd-cm's resource.customizations.health.<group>_<kind>
// keys: Argo CD's health of each of our CRs (health/src, built by `make
// manifests`), so an Application that deploys them shows their real state.
func HealthChecks() (map[string]string, error) {
	entries, err := healthFS.ReadDir("health")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		kind, ok := healthKinds[e.Name()]
		if !ok {
			return nil, fmt.Errorf("health/%s: no Argo CD kind for it in healthKinds", e.Name())
		}
		b, err := healthFS.ReadFile(path.Join("health", e.Name()))
		if err != nil {
			return nil, err
		}
		out["resource.customizations.health."+kind] = string(b)
	}
	if len(out) != len(healthKinds) {
		return nil, fmt.Errorf("%d health scripts embedded, %d kinds expected", len(out), len(healthKinds))
	}
	return out, nil
}

// ExtensionConfig is the proxy extension "gitops-service" in its own key
// (Argo CD 2.14 and 3.x read extension.config.<name> beside
// extension.config, so no other extension's configuration is touched): the
// backend is our ui-proxy Service; the header's value is read from the
// Secret, never written here.
func ExtensionConfig(n Names) string {
	return "services:\n" +
		"- url: " + n.UIProxyURL + "\n" +
		"  headers:\n" +
		"  - name: Gitops-Service-Token\n" +
		"    value: $" + n.UIProxySecret + ":token\n"
}

// AdminPolicy lets Argo CD's admin role open the panel (its built-in role
// does not include invoking extensions); Argo CD concatenates every
// policy.<name>.csv key with policy.csv.
const AdminPolicy = "p, role:admin, extensions, invoke, gitops-service, allow\n"

// Settings are our keys of one ConfigMap.
type Settings struct {
	ConfigMap string
	Data      map[string]string
}

// Desired are our keys of each of Argo CD's ConfigMaps, in a fixed order.
func Desired(n Names) ([]Settings, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	cm, err := HealthChecks()
	if err != nil {
		return nil, err
	}
	cm[ExtensionConfigKey] = ExtensionConfig(n)
	params := map[string]string{ProxyExtensionKey: "true"}
	for k, v := range AppSetParams {
		params[k] = v
	}
	return []Settings{
		{ConfigMap: n.ArgoCM, Data: cm},
		{ConfigMap: n.CmdParamsCM, Data: params},
		{ConfigMap: n.RBACCM, Data: map[string]string{AdminPolicyKey: AdminPolicy}},
	}, nil
}

// Validate refuses names that would change the written YAML's structure or
// name one ConfigMap twice.
func (n Names) Validate() error {
	for flag, v := range map[string]string{"--argocd-cm": n.ArgoCM, "--argocd-cmd-params-cm": n.CmdParamsCM, "--argocd-rbac-cm": n.RBACCM, "--ui-proxy-secret": n.UIProxySecret} {
		if !dns1123(v) {
			return fmt.Errorf("%s %q is not a Kubernetes object name", flag, v)
		}
	}
	if n.ArgoCM == n.CmdParamsCM || n.ArgoCM == n.RBACCM || n.CmdParamsCM == n.RBACCM {
		return fmt.Errorf("--argocd-cm, --argocd-cmd-params-cm and --argocd-rbac-cm name %q, %q and %q: three different ConfigMaps", n.ArgoCM, n.CmdParamsCM, n.RBACCM)
	}
	if !strings.HasPrefix(n.UIProxyURL, "http://") && !strings.HasPrefix(n.UIProxyURL, "https://") || !validURLChars(n.UIProxyURL) {
		return fmt.Errorf("--ui-proxy-url %q is not an http(s) URL", n.UIProxyURL)
	}
	return nil
}

// validURLChars admits what a URL's host, port and path use, and nothing
// that YAML reads as structure (a space before '#', quotes, line breaks).
func validURLChars(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(":/.-_~[]%", r):
		default:
			return false
		}
	}
	return true
}

func dns1123(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' || r == '.') && i > 0 && i < len(s)-1
		if !ok {
			return false
		}
	}
	return true
}

// sortedKeys are m's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
