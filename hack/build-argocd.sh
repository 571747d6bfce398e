#!/usr/bin/env bash
# Builds Argo CD (github.com/argoproj/argo-cd/v2/cmd) as one multi-call binary
# into $GITOPS_SERVICE_CACHE/argocd-v$VERSION/bin/argocd, plus the component
# symlinks (the binary picks the component from argv[0]).
#
# Go ignores replace directives of dependencies, so the throwaway wrapper module
# copies argo-cd's whole replace block from its go.mod.
# argocd-server serves the web UI embedded at build time: build-argocd-ui.sh builds
# it, and the binary is built from a writable copy of the module with ui/dist/app
# filled in (a replace in the wrapper module).
# Skips everything when the binary (with the UI) and symlinks already exist.
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

VERSION="${ARGOCD_VERSION:-2.14.21}"
MOD="github.com/argoproj/argo-cd/v2"
LINKS=(argocd-server argocd-repo-server argocd-application-controller argocd-applicationset-controller)

CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/argocd-v$VERSION/bin"

log() { echo "[argocd] $*"; }

make_links() {
  local l
  for l in "${LINKS[@]}"; do
    if [ "$(readlink "$OUT/$l" 2>/dev/null || true)" != "argocd" ]; then
      ln -sfn argocd "$OUT/$l"
      log "linked $OUT/$l -> argocd"
    fi
  done
}

# The marker says the binary embeds the web UI (older caches have one without).
UI_MARK="$OUT/.ui-embedded"
if [ -x "$OUT/argocd" ] && [ -f "$UI_MARK" ]; then
  log "argocd v$VERSION: cached ($OUT/argocd)"
  make_links
  exit 0
fi

command -v go >/dev/null 2>&1 || { log "ERROR: go is not on PATH" >&2; exit 1; }
mkdir -p "$OUT"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-argocd-build.XXXXXX")"
tmp=""
# An interrupted build leaves neither the temp module nor a half-written binary.
trap 'rm -rf "$WORK"; if [ -n "$tmp" ]; then rm -f "$tmp"; fi' EXIT

export GOWORK=off
export GOFLAGS="-mod=mod ${GOFLAGS:-}"
export CGO_ENABLED="${CGO_ENABLED:-0}"
NICE=(nice -n 10)

log "downloading $MOD@v$VERSION go.mod..."
# Outside any module (the temp dir), so the project's go.mod is never involved.
cd "$WORK"
AMOD="$(GOFLAGS= go mod download -json "$MOD@v$VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$AMOD" ] || { log "ERROR: could not find go.mod of $MOD@v$VERSION" >&2; exit 1; }

{
  echo "module gitops-service.local/argocd-build"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$AMOD")"
  echo
  echo "require $MOD v$VERSION"
  echo
  sed -n '/^replace (/,/^)/p' "$AMOD"
  # single-line replace directives, if any
  grep -E '^replace [^(]' "$AMOD" || true
} > "$WORK/go.mod"
log "wrapper module: $WORK/go.mod ($(grep -c '=>' "$WORK/go.mod") replaces)"

log "downloading modules (first time ~3 min, ~1.5 GB)..."
"${NICE[@]}" go get "$MOD/cmd@v$VERSION"

# The web UI, built from the module's ui/ (cached), embedded through a writable copy.
MODDIR="$(go list -m -f '{{.Dir}}' "$MOD")"
"$HACK/build-argocd-ui.sh" "$MODDIR" "$VERSION"
UIDIST="$CACHE/argocd-ui-v$VERSION/dist/app"
log "copying $MOD with the web UI into the wrapper module..."
cp -r "$MODDIR" "$WORK/argo-cd"
chmod -R u+w "$WORK/argo-cd"
rm -rf "$WORK/argo-cd/ui/dist/app"
cp -r "$UIDIST" "$WORK/argo-cd/ui/dist/app"
go mod edit -replace "$MOD=./argo-cd"

log "building argocd (takes ~6 min on 2 cores when not cached)..."
start=$(date +%s)
tmp="$OUT/.argocd.tmp.$$"
rm -f "$tmp"
if ! "${NICE[@]}" go build -trimpath -ldflags "-s -w -X $MOD/common.version=$VERSION" -o "$tmp" "$MOD/cmd"; then
  rm -f "$tmp"
  log "ERROR: building argocd failed" >&2
  exit 1
fi
mv -f "$tmp" "$OUT/argocd"
touch "$UI_MARK"
log "built $OUT/argocd in $(( $(date +%s) - start ))s"
make_links
log "done: $OUT"
