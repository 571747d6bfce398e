#!/usr/bin/env bash
# Builds kustomize (KUSTOMIZE_VERSION: the version the Argo CD in use ships) into
# $GITOPS_SERVICE_CACHE/kustomize-v$VERSION/bin: Argo CD's repo-server runs it for
# kustomization directories and for kustomize overrides (images, replicas, patches).
set -euo pipefail

VERSION="${KUSTOMIZE_VERSION:-5.4.3}"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/kustomize-v$VERSION/bin"
log() { echo "[kustomize] $*"; }

if [ -x "$OUT/kustomize" ]; then
  log "kustomize v$VERSION: cached ($OUT/kustomize)"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "ERROR: go is not on PATH" >&2; exit 1; }
mkdir -p "$OUT"
TMPBIN="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-kustomize.XXXXXX")"
trap 'rm -rf "$TMPBIN"' EXIT
log "building kustomize v$VERSION (~1 min)..."
start=$(date +%s)
(cd "$TMPBIN" && GOWORK=off GOFLAGS= CGO_ENABLED=0 GOBIN="$TMPBIN" nice -n 10 \
  go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@v$VERSION")
mv -f "$TMPBIN/kustomize" "$OUT/kustomize"
log "built $OUT/kustomize in $(( $(date +%s) - start ))s"
