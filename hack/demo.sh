#!/usr/bin/env bash
# `make demo`: a local Kubernetes + Argo CD with the GitOps Service sidecar, and
# the sample GitOpsDeployment deploying from a local git repository (see
# hack/demo/main.go). The Makefile builds the test stack and bin/gitops-service
# first. DEMO_EXIT=1 stops once the sample is Synced/Healthy (smoke checks).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for bin in etcd redis-server git; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "[demo] $bin is missing: running hack/install-deps.sh"
    hack/install-deps.sh
    break
  fi
done
if [ ! -x bin/gitops-service ]; then
  echo "[demo] bin/gitops-service is missing: building it"
  go build -o bin/gitops-service ./extension
fi

# A built binary (not `go run`) so that Ctrl-C reaches the demo directly and it
# can stop everything it started.
go build -o bin/demo ./hack/demo
exec bin/demo "$@"
