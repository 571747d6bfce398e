package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PrometheusVersion is the Go module version of Prometheus that
// hack/build-prometheus.sh builds (keep the two in sync).
const PrometheusVersion = "v0.316.0"

// PrometheusBinary is the stack's Prometheus
// ($GITOPS_SERVICE_CACHE/prometheus-<PrometheusVersion>/bin/prometheus), or
// an error wrapping ErrMissingBinaries; while hack/test-stack.sh builds it,
// this waits for it.
func PrometheusBinary() (string, error) {
	b := &BinaryPaths{CacheDir: CacheDir()}
	p := filepath.Join(b.CacheDir, "prometheus-"+PrometheusVersion, "bin", "prometheus")
	return p, b.require(p)
}

// Prometheus is a real Prometheus the test started, scraping targets.
type Prometheus struct {
	// URL of its API, http://127.0.0.1:<port>.
	URL  string
	proc *Process
}

// StartPrometheus starts Prometheus on 127.0.0.1 scraping the given
// host:port targets (path /metrics) every scrape interval, and waits until
// it is ready. It is stopped when the test ends. Without the binary the test
// is skipped (it fails under GITOPS_SERVICE_REQUIRE_STACK=1).
func StartPrometheus(t testing.TB, scrape time.Duration, targets ...string) *Prometheus {
	t.Helper()
	bin, err := PrometheusBinary()
	if err != nil {
		if Required() {
			t.Fatal(err)
		}
		t.Skip("needs the test stack's Prometheus (hack/build-prometheus.sh):", err)
	}
	dir := t.TempDir()
	var list string
	for i, target := range targets {
		if i > 0 {
			list += ", "
		}
		list += strconv.Quote(target)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: test\n    static_configs:\n      - targets: [%s]\n", scrape, scrape, list)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartProcess("prometheus", filepath.Join(dir, "prometheus.log"), dir, nil, bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+loopback(port), "--log.level=warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	prom := &Prometheus{URL: "http://" + loopback(port), proc: p}
	err = waitReady(context.Background(), p, time.Minute, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, prom.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return prom
}
