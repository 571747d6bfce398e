package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gitops-service/gitops-service/extension/buildinfo"
)

func TestBuildInfoGauge(t *testing.T) {
	defer func(v, r string) { buildinfo.Version, buildinfo.Revision = v, r }(buildinfo.Version, buildinfo.Revision)
	buildinfo.Version, buildinfo.Revision = "v1.2.3-4-gabcdef0-dirty", "abcdef0123"
	reg := prometheus.NewRegistry()
	registerBuildInfo(reg)
	want := `# HELP gitops_service_build_info The sidecar's build: version, Go version and git revision; always 1.
# TYPE gitops_service_build_info gauge
gitops_service_build_info{goversion="` + runtime.Version() + `",revision="abcdef0123",version="v1.2.3-4-gabcdef0-dirty"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gitops_service_build_info"); err != nil {
		t.Fatal(err)
	}
}
