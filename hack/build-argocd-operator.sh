#!/usr/bin/env bash
# Builds the Argo CD operator's controller (argoproj-labs/argocd-operator) from the source copy in
# ../shared/vendor/argocd-operator (the Go module proxy does not serve it) into
# $GITOPS_SERVICE_CACHE/argocd-operator-<commit>/bin/manager, with its CRDs beside it in
# crd/ and its Redis templates in redis/: test/install/operator_test.go runs it against the test stack's kube-apiserver to see
# what the operator makes of our ArgoCD snippet. Its dependencies come from the module proxy.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Keep in sync with ArgoCDOperatorCommit in test/stack/operator.go.
COMMIT=cf5d1c02
SRC="${ARGOCD_OPERATOR_SRC:-$ROOT/../shared/vendor/argocd-operator}"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/argocd-operator-$COMMIT"
log() { echo "[argocd-operator] $*"; }

if [ -x "$OUT/bin/manager" ] && [ -d "$OUT/crd" ] && [ -d "$OUT/redis" ]; then
  log "cached ($OUT/bin/manager)"
  exit 0
fi
tgz=$(ls "$SRC"/argocd-operator-*-g"$COMMIT".tgz 2>/dev/null | head -1)
[ -n "$tgz" ] || { log "ERROR: no argocd-operator-*-g$COMMIT.tgz in $SRC" >&2; exit 1; }
TMP="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-operator.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
tar xzf "$tgz" -C "$TMP"
log "building the operator's controller from $(basename "$tgz") (several minutes on a cold cache)..."
start=$(date +%s)
mkdir -p "$OUT/bin"
(cd "$TMP/argocd-operator" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 \
  go build -o "$OUT/bin/manager.tmp" ./cmd)
rm -rf "$OUT/crd" "$OUT/redis" && cp -r "$TMP/argocd-operator/config/crd/bases" "$OUT/crd"
# The Redis configuration templates its image carries at /var/lib/redis (REDIS_CONFIG_PATH).
cp -r "$TMP/argocd-operator/build/redis" "$OUT/redis"
mv -f "$OUT/bin/manager.tmp" "$OUT/bin/manager"
log "built $OUT/bin/manager in $(( $(date +%s) - start ))s"
