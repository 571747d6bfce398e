#!/usr/bin/env bash
# Builds Prometheus (PROMETHEUS_VERSION, the Go module's version: v0.316.0 is
# Prometheus 3.16) into $GITOPS_SERVICE_CACHE/prometheus-$VERSION/bin: the
# analysis tests (reconcilers/analysis, reconcilers/promotionrun) query a real
# Prometheus scraping a metrics endpoint the test serves. Built in a module of
# its own (not the project's: its dependencies stay out of go.mod) with every
# service discovery left out (remove_all_sd: the tests scrape a static target)
# and without the web UI's assets (the API is all the tests use).
set -euo pipefail

# Keep in sync with PrometheusVersion in test/stack/binaries.go.
VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/prometheus-$VERSION/bin"
log() { echo "[prometheus] $*"; }

if [ -x "$OUT/prometheus" ]; then
  log "prometheus $VERSION: cached ($OUT/prometheus)"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "ERROR: go is not on PATH" >&2; exit 1; }
mkdir -p "$OUT"
MOD="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-prometheus.XXXXXX")"
trap 'rm -rf "$MOD"' EXIT
log "building prometheus $VERSION (cold: ~6 min on 2 cores)..."
start=$(date +%s)
LDFLAGS="-s -w -X github.com/prometheus/common/version.Version=$VERSION -X github.com/prometheus/common/version.Branch=gitops-service-test"
(
  cd "$MOD"
  export GOWORK=off GOFLAGS= CGO_ENABLED=0
  go mod init gitops-service.test/prometheus >/dev/null 2>&1
  go get "github.com/prometheus/prometheus/cmd/prometheus@$VERSION" 2>/dev/null
  nice -n 10 go build -trimpath -tags remove_all_sd -ldflags "$LDFLAGS" -o "$MOD/prometheus" github.com/prometheus/prometheus/cmd/prometheus
)
mv -f "$MOD/prometheus" "$OUT/prometheus"
log "built $OUT/prometheus in $(( $(date +%s) - start ))s"
