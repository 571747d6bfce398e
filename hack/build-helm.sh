#!/usr/bin/env bash
# Builds helm (HELM_VERSION) from its Go module into
# $GITOPS_SERVICE_CACHE/helm-v$VERSION/bin: the Helm install path's tests
# (test/install/helm_test.go) render and install Argo CD's chart with it.
set -euo pipefail

# Keep in sync with HelmVersion in test/stack/helm.go.
VERSION="${HELM_VERSION:-3.22.0}"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/helm-v$VERSION/bin"
log() { echo "[helm] $*"; }

if [ -x "$OUT/helm" ]; then
  log "helm v$VERSION: cached ($OUT/helm)"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "ERROR: go is not on PATH" >&2; exit 1; }
mkdir -p "$OUT"
TMPBIN="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-helm.XXXXXX")"
trap 'rm -rf "$TMPBIN"' EXIT
log "building helm v$VERSION (~3 min)..."
start=$(date +%s)
# The -X flags helm's own Makefile sets: its version, and the Kubernetes version `helm
# template` assumes without a cluster (that of the client-go helm VERSION is built with).
K8S_MINOR=37
LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=v$VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in pkg/lint/rules pkg/chartutil; do
  LDFLAGS+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$K8S_MINOR"
done
(cd "$TMPBIN" && GOWORK=off GOFLAGS= CGO_ENABLED=0 GOBIN="$TMPBIN" nice -n 10 \
  go install -trimpath -ldflags "$LDFLAGS" "helm.sh/helm/v3/cmd/helm@v$VERSION")
mv -f "$TMPBIN/helm" "$OUT/helm"
log "built $OUT/helm in $(( $(date +%s) - start ))s"
