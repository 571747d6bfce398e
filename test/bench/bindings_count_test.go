package bench

import (
	"strings"
	"testing"
)

// The bindings benchmark's accounting: writes per Application by resource,
// from two scrapes of the API server, and generator requests per binding.
func TestPhaseWritesCountsWritesOnly(t *testing.T) {
	key := func(resource, sub, verb string) string {
		return `apiserver_request_total{code="200",component="apiserver",dry_run="",group="argoproj.io",resource="` + resource +
			`",scope="resource",subresource="` + sub + `",verb="` + verb + `",version="v1alpha1"}`
	}
	before := metrics{key("applications", "", "PATCH"): 10, key("applications", "", "GET"): 5}
	after := metrics{
		key("applications", "", "PATCH"):                      70, // 60 in the phase
		key("applications", "", "GET"):                        500,
		key("snapshotenvironmentbindings", "status", "PATCH"): 30,
		key("applicationsets", "", "APPLY"):                   0,
	}
	got := phaseWrites(before, after, 30)
	want := "3.0 in all, PATCH applications 2.00, PATCH snapshotenvironmentbindings/status 1.00"
	if got != want {
		t.Fatalf("phaseWrites = %q, want %q", got, want)
	}
}

func TestGeneratorCallsPerBinding(t *testing.T) {
	before := metrics{`gitops_service_http_request_duration_seconds_count{code="200",server="generator"}`: 4,
		`gitops_service_http_request_duration_seconds_sum{code="200",server="generator"}`: 1}
	after := metrics{`gitops_service_http_request_duration_seconds_count{code="200",server="generator"}`: 24,
		`gitops_service_http_request_duration_seconds_sum{code="200",server="generator"}`:  1.1,
		`gitops_service_http_request_duration_seconds_count{code="200",server="ui-proxy"}`: 99}
	if got, want := generatorCalls(before, after, 10), "2.00 per binding, 5.0 ms each on average"; got != want {
		t.Fatalf("generatorCalls = %q, want %q", got, want)
	}
	if got := generatorCalls(after, after, 10); got != "none" {
		t.Fatalf("no request: %q", got)
	}
}

// One repository per tenant holds that tenant's applications only, and
// the bindings' side no GitOpsDeployment kustomizations.
func TestBindFilesPerTenant(t *testing.T) {
	w := bindWorld{prefix: "seb", n: 6, m: 3}
	files := bindFiles(w, func(i int) bool { return i%3 == 1 })
	for name := range files {
		if !strings.HasPrefix(name, "comp/a001-") && !strings.HasPrefix(name, "comp/a004-") {
			t.Errorf("tenant 1's repository has %s", name)
		}
	}
	if len(files) != 2*bindComponents*2 {
		t.Errorf("%d files, want %d", len(files), 2*bindComponents*2)
	}
	gd := bindFiles(w, func(int) bool { return true }, "1", "2")
	if _, ok := gd["gd/v2/a005-c2/kustomization.yaml"]; !ok || len(gd) != 6*bindComponents*(2+2) {
		t.Errorf("GitOpsDeployments' repository: %d files", len(gd))
	}
}

func TestSidecarReconcilesPerApplication(t *testing.T) {
	before := metrics{`controller_runtime_reconcile_total{controller="snapshotenvironmentbinding",result="success"}`: 10}
	after := metrics{`controller_runtime_reconcile_total{controller="snapshotenvironmentbinding",result="success"}`: 40,
		`controller_runtime_reconcile_total{controller="snapshotenvironmentbinding",result="error"}`: 5,
		`controller_runtime_reconcile_total{controller="gitopsdeployment",result="success"}`:         0}
	if got, want := sidecarReconciles(before, after, 10), "snapshotenvironmentbinding 3.5"; got != want {
		t.Fatalf("sidecarReconciles = %q, want %q", got, want)
	}
	if got := sidecarReconciles(after, after, 10); got != "none" {
		t.Fatalf("no reconcile: %q", got)
	}
}
