#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kubectl from the Go module
# k8s.io/kubernetes into $GITOPS_SERVICE_CACHE/kube-v$VERSION/bin.
#
# k8s.io/kubernetes is not meant to be imported: its go.mod points every
# k8s.io/* staging module at ./staging/src/... . A throwaway wrapper module in a
# temp dir copies that replace block with each staging path rewritten to the
# published module version, then builds the commands from the module cache.
# Skips everything when all binaries already exist.
set -euo pipefail

VERSION="${KUBE_VERSION:-1.32.13}"
MINOR="$(echo "$VERSION" | cut -d. -f2)"
PATCH="$(echo "$VERSION" | cut -d. -f3)"
STAGING_VERSION="v0.${MINOR}.${PATCH}"
# Staging modules the Go proxy does not serve at $STAGING_VERSION; they come
# from the same minor release instead. kube-controller-manager links a little
# of them (its config types, endpointslice and CSI-translation helpers).
PINNED_VERSION="${KUBE_PINNED_STAGING_VERSION:-v0.${MINOR}.2}"
PINNED=(cri-client csi-translation-lib endpointslice kube-controller-manager kube-proxy kube-scheduler
        sample-apiserver sample-cli-plugin sample-controller)
CMDS=(kube-apiserver kube-controller-manager kubectl)

CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/kube-v$VERSION/bin"

log() { echo "[kube] $*"; }

missing=()
for c in "${CMDS[@]}"; do
  if [ -x "$OUT/$c" ]; then
    log "$c v$VERSION: cached ($OUT/$c)"
  else
    missing+=("$c")
  fi
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

command -v go >/dev/null 2>&1 || { log "ERROR: go is not on PATH" >&2; exit 1; }
mkdir -p "$OUT"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-kube-build.XXXXXX")"
tmp=""
# An interrupted build leaves neither the temp module nor a half-written binary.
trap 'rm -rf "$WORK"; if [ -n "$tmp" ]; then rm -f "$tmp"; fi' EXIT

export GOWORK=off
export GOFLAGS="-mod=mod ${GOFLAGS:-}"
export CGO_ENABLED="${CGO_ENABLED:-0}"
NICE=(nice -n 10)

log "downloading k8s.io/kubernetes@v$VERSION go.mod..."
# Outside any module (the temp dir), so the project's go.mod is never involved.
cd "$WORK"
KMOD="$(GOFLAGS= go mod download -json "k8s.io/kubernetes@v$VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$KMOD" ] || { log "ERROR: could not find go.mod of k8s.io/kubernetes@v$VERSION" >&2; exit 1; }

is_pinned() {
  local m="$1" p
  for p in "${PINNED[@]}"; do [ "$m" = "$p" ] && return 0; done
  return 1
}

{
  echo "module gitops-service.local/kube-build"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$KMOD")"
  echo
  echo "require k8s.io/kubernetes v$VERSION"
  echo
  echo "replace ("
  # Every "k8s.io/X => ./staging/src/k8s.io/X" becomes "k8s.io/X => k8s.io/X vN".
  sed -n '/^replace (/,/^)/p' "$KMOD" | grep -E '=>[[:space:]]*\./staging/' | while read -r mod _; do
    name="${mod#k8s.io/}"
    if is_pinned "$name"; then v="$PINNED_VERSION"; else v="$STAGING_VERSION"; fi
    echo "	$mod => $mod $v"
  done
  echo ")"
} > "$WORK/go.mod"
log "wrapper module: $WORK/go.mod ($(grep -c '=>' "$WORK/go.mod") replaces)"

pkgs=()
for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@v$VERSION"); done
log "downloading modules (first time ~1 min)..."
"${NICE[@]}" go get "${pkgs[@]}"

LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=v$VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean"
for c in "${missing[@]}"; do
  case "$c" in
    kube-apiserver) hint=" (takes ~6 min on 2 cores when not cached)";;
    kube-controller-manager) hint=" (~2 min more)";;
    *) hint="";;
  esac
  log "building $c$hint..."
  start=$(date +%s)
  tmp="$OUT/.$c.tmp.$$"
  rm -f "$tmp"
  if ! "${NICE[@]}" go build -trimpath -ldflags "$LDFLAGS" -o "$tmp" "k8s.io/kubernetes/cmd/$c"; then
    rm -f "$tmp"
    log "ERROR: building $c failed" >&2
    exit 1
  fi
  mv -f "$tmp" "$OUT/$c"
  log "built $OUT/$c in $(( $(date +%s) - start ))s"
done
"$OUT/kubectl" version --client 2>/dev/null | head -1 | sed 's/^/[kube] /' || true
log "done: $OUT"
