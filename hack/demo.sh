#!/usr/bin/env bash
# `make demo`: a local Kubernetes + Argo CD with the GitOps Service sidecar, and
# the sample GitOpsDeployment deploying from a local git repository.
# DEMO_EXIT=1 stops after showing it Synced/Healthy (used for smoke checks).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for bin in etcd redis-server git; do
  command -v "$bin" >/dev/null 2>&1 || { hack/install-deps.sh; break; }
done
exec go run ./hack/demo "$@"
