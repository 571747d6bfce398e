package isolation

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	as "github.com/gitops-service/gitops-service/api/appstudio/v1alpha1"
)

// lineBreaks are characters a YAML parser takes for the end of a line (NEL
// and the Unicode separators among them) or that are no text at all: in a
// value that reaches the ApplicationSet's template they could end a block and
// add keys of their own to the generated Application.
var lineBreaks = map[string]string{
	"NEL": "\u0085", "LS": "\u2028", "PS": "\u2029", "LF": "\n", "CR": "\r", "NUL": "\x00", "ESC": "\x1b", "DEL": "\x7f", "C1": "\u009f",
}

// payload puts ch where a line break would end the env patch and start
// metadata of the tenant's choosing.
func payload(ch string) string {
	return strings.Join([]string{"a", "metadata:", "  name: kube-prometheus-stack-prod", "  labels:", "    managed-gitops.redhat.com/owner-uid: x"}, ch)
}

// templateCases are the values that reach the ApplicationSet's template and
// patch: env names and values (the API server refuses them), the Components'
// GitOps repository, path and branch, and the Snapshot's images (the binding
// reconciler refuses them, and the generator with the same check).
func templateCases() []hostileCase {
	var out []hostileCase
	bindingCase := func(name string, w want, setup func(*testing.T, tenantEnv), mut func(*as.SnapshotEnvironmentBinding)) {
		if setup == nil {
			setup = func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", nil) }
		}
		out = append(out, hostileCase{Kind: "SnapshotEnvironmentBinding", Name: name, Setup: setup, Want: w,
			Object: func(e tenantEnv) client.Object {
				seb := &as.SnapshotEnvironmentBinding{ObjectMeta: om(e.NS, "shop-binding"),
					Spec: as.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "shop", Snapshot: "shop"}}
				if mut != nil {
					mut(seb)
				}
				return seb
			}})
	}
	envCase := func(name string, env []as.EnvVarPair) {
		out = append(out, hostileCase{Kind: "Environment", Name: name, Want: errorOccurred("", "rejected by the API server"),
			Object: func(e tenantEnv) client.Object {
				return &as.Environment{ObjectMeta: om(e.NS, "prod"), Spec: as.EnvironmentSpec{DisplayName: "prod",
					Configuration: as.EnvironmentConfiguration{Env: env}}}
			}})
		bindingCase("component env: "+name, errorOccurred("", "rejected by the API server"), nil, func(seb *as.SnapshotEnvironmentBinding) {
			seb.Spec.Components = []as.BindingComponent{{Name: "shop-web", Configuration: as.BindingComponentConfiguration{Env: env}}}
		})
	}
	for name, ch := range lineBreaks {
		envCase(fmt.Sprintf("env value with %s", name), []as.EnvVarPair{{Name: "LOG", Value: payload(ch)}})
		envCase(fmt.Sprintf("env name with %s", name), []as.EnvVarPair{{Name: "LOG" + ch, Value: "1"}})
	}
	envCase("env name with =", []as.EnvVarPair{{Name: "A=B", Value: "1"}})
	envCase("env name too long", []as.EnvVarPair{{Name: strings.Repeat("A", 257), Value: "1"}})
	envCase("env value too long", []as.EnvVarPair{{Name: "A", Value: strings.Repeat("v", 16385)}})
	many := make([]as.EnvVarPair, 129)
	for i := range many {
		many[i] = as.EnvVarPair{Name: fmt.Sprintf("V%d", i), Value: "1"}
	}
	envCase("129 env variables", many)

	// What the binding reconciler refuses (it admits no schema of ours):
	// the Components' status and the Snapshot's images.
	gitops := func(mut func(*as.GitOpsStatus)) func(*testing.T, tenantEnv) {
		return func(t *testing.T, e tenantEnv) { appStudioTenant(t, e, "shop", mut) }
	}
	for name, ch := range lineBreaks {
		ch := ch
		bindingCase("GitOps path with "+name, errorOccurred("", ""), gitops(func(g *as.GitOpsStatus) { g.Context = "components/" + payload(ch) }), nil)
		bindingCase("GitOps branch with "+name, errorOccurred("", ""), gitops(func(g *as.GitOpsStatus) { g.Branch = "main" + payload(ch) }), nil)
		bindingCase("GitOps repository with "+name, errorOccurred("", ""), gitops(func(g *as.GitOpsStatus) { g.RepositoryURL = gitopsRepo + "/" + payload(ch) }), nil)
		bindingCase("Snapshot image with "+name, errorOccurred(as.BindingReasonErrorOccurred, "image"), func(t *testing.T, e tenantEnv) {
			appStudioTenant(t, e, "shop", nil)
			create(t, &as.Snapshot{ObjectMeta: om(e.NS, "hostile"), Spec: as.SnapshotSpec{Application: "shop",
				Components: []as.SnapshotComponent{{Name: "shop-web", ContainerImage: "quay.io/x/web:1" + payload(ch)}}}})
		}, func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Snapshot = "hostile" })
	}
	for _, img := range []string{"--help", "-x=y", "quay.io/x/web:1=evil:2", "quay.io/x/web:1 --load-restrictor=LoadRestrictionsNone"} {
		img := img
		bindingCase(fmt.Sprintf("Snapshot image %q", img), errorOccurred(as.BindingReasonErrorOccurred, "not an image reference"), func(t *testing.T, e tenantEnv) {
			appStudioTenant(t, e, "shop", nil)
			create(t, &as.Snapshot{ObjectMeta: om(e.NS, "hostile"), Spec: as.SnapshotSpec{Application: "shop",
				Components: []as.SnapshotComponent{{Name: "shop-web", ContainerImage: img}}}})
		}, func(seb *as.SnapshotEnvironmentBinding) { seb.Spec.Snapshot = "hostile" })
	}
	return out
}
