#!/usr/bin/env bash
# Builds Argo CD (github.com/argoproj/argo-cd/v<major>/cmd) as one multi-call
# binary into $GITOPS_SERVICE_CACHE/argocd-v$VERSION/bin/argocd, plus the
# component symlinks (the binary picks the component from argv[0]) and the
# helper scripts from Argo CD's hack/ that the repo-server runs.
#
#   ARGOCD_VERSION=2.14.21 hack/build-argocd.sh   # or 3.5.1 (the default)
#
# Go ignores replace directives of dependencies, so the throwaway wrapper module
# copies argo-cd's whole replace block from its go.mod. From 3.3 on gitops-engine
# is a nested module (`replace ... => ./gitops-engine`) that is not in the module
# zip and that the proxy refuses: it comes from the vendored tarball in
# ../shared/vendor/argo-cd-gitops-engine beside the checkout (override with
# GITOPS_SERVICE_VENDOR), unpacked into the cache.
# argocd-server answers page loads from the web UI embedded at build time: the
# binary is built from a writable copy of the module whose ui/dist/app is the UI
# hack/build-argocd-ui.sh built (a replace in the wrapper module). The marker
# $OUT/.ui-embedded says the binary has it: a cache built before (argocd without
# the UI) is rebuilt once.
# Skips everything when the binary (with the UI), helpers and symlinks exist.
set -euo pipefail

VERSION="${ARGOCD_VERSION:-3.5.1}"
MAJOR="${VERSION%%.*}"
MOD="github.com/argoproj/argo-cd/v$MAJOR"
LINKS=(argocd-server argocd-repo-server argocd-application-controller argocd-applicationset-controller)
# Run by the repo-server from $PATH (3.x runs git-verify-wrapper.sh for every git source).
HELPERS=(git-verify-wrapper.sh git-ask-pass.sh gpg-wrapper.sh)

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENDOR="${GITOPS_SERVICE_VENDOR:-$HACK/../../shared/vendor}"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/argocd-v$VERSION/bin"
SRC="$CACHE/argocd-v$VERSION/src"

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

helpers_present() {
  local h
  for h in "${HELPERS[@]}"; do [ -x "$OUT/$h" ] || return 1; done
}

# The test stack also reads Argo CD's CRDs from the module's source in the Go
# module cache, which can be gone while this cache is not (a new $HOME, `go
# clean -modcache`): then the path below downloads it again (seconds).
module_source_present() {
  command -v go >/dev/null 2>&1 && [ -f "$(go env GOMODCACHE)/github.com/argoproj/argo-cd/v$MAJOR@v$VERSION/go.mod" ]
}

UI_MARK="$OUT/.ui-embedded"
if [ -x "$OUT/argocd" ] && [ -f "$UI_MARK" ] && helpers_present && module_source_present; then
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

log "downloading $MOD@v$VERSION..."
# Outside any module (the temp dir), so the project's go.mod is never involved.
cd "$WORK"
DL="$(GOFLAGS= go mod download -json "$MOD@v$VERSION")"
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$DL"; }
AMOD="$(json_field GoMod)"
ADIR="$(json_field Dir)"
[ -f "$AMOD" ] || { log "ERROR: could not find go.mod of $MOD@v$VERSION" >&2; exit 1; }
[ -d "$ADIR" ] || { log "ERROR: could not find the source of $MOD@v$VERSION" >&2; exit 1; }

for h in "${HELPERS[@]}"; do
  if [ -f "$ADIR/hack/$h" ]; then
    install -m 0755 "$ADIR/hack/$h" "$OUT/$h"
  else
    log "ERROR: $MOD@v$VERSION has no hack/$h" >&2
    exit 1
  fi
done
if [ -x "$OUT/argocd" ] && [ -f "$UI_MARK" ]; then
  log "argocd v$VERSION: cached ($OUT/argocd); helper scripts installed"
  make_links
  exit 0
fi

# Local replaces (=> ./dir) point into the Argo CD repository outside the module
# zip; the only one known is gitops-engine (3.3+), which comes from the vendor dir.
ENGINE_REPLACE=""
if grep -Eq '=>[[:space:]]*\./gitops-engine[[:space:]]*$' "$AMOD"; then
  TGZ="$VENDOR/argo-cd-gitops-engine/gitops-engine-v$VERSION.tgz"
  if [ ! -f "$TGZ" ]; then
    log "ERROR: Argo CD v$VERSION needs its gitops-engine, which the Go proxy does not serve:" >&2
    log "ERROR: $TGZ is missing." >&2
    log "ERROR: check out the shared/ directory beside the repository or set GITOPS_SERVICE_VENDOR." >&2
    exit 1
  fi
  if [ ! -f "$SRC/gitops-engine/go.mod" ]; then
    rm -rf "$SRC/gitops-engine" && mkdir -p "$SRC"
    tar -xzf "$TGZ" -C "$SRC"
    [ -f "$SRC/gitops-engine/go.mod" ] || { log "ERROR: $TGZ has no gitops-engine/go.mod" >&2; exit 1; }
    log "unpacked $TGZ into $SRC/gitops-engine"
  fi
  ENGINE_REPLACE="$SRC/gitops-engine"
fi
if grep -E '=>[[:space:]]*\.\.?/' "$AMOD" | grep -Ev '\./gitops-engine[[:space:]]*$' | grep -q .; then
  log "ERROR: $MOD@v$VERSION has local replaces this script does not know how to provide:" >&2
  grep -E '=>[[:space:]]*\.\.?/' "$AMOD" >&2
  exit 1
fi

{
  echo "module gitops-service.local/argocd-build"
  echo
  echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$AMOD")"
  echo
  echo "require $MOD v$VERSION"
  echo
  sed -n '/^replace (/,/^)/p' "$AMOD"
  # single-line replace directives, if any (the local gitops-engine one rewritten)
  grep -E '^replace [^(]' "$AMOD" | grep -Ev '\./gitops-engine[[:space:]]*$' || true
  if [ -n "$ENGINE_REPLACE" ]; then
    echo "replace github.com/argoproj/argo-cd/gitops-engine => $ENGINE_REPLACE"
  fi
} > "$WORK/go.mod"
log "wrapper module: $WORK/go.mod ($(grep -c '=>' "$WORK/go.mod") replaces)"

log "downloading modules (first time ~3 min, ~1.5 GB)..."
"${NICE[@]}" go get "$MOD/cmd@v$VERSION"

# The web UI (cached by version; hack/test-stack.sh built it already), embedded
# through a writable copy of the module.
"$HACK/build-argocd-ui.sh"
UIDIST="$CACHE/argocd-ui-v$VERSION/dist/app"
[ -f "$UIDIST/index.html" ] || { log "ERROR: no web UI in $UIDIST" >&2; exit 1; }
cp -r "$ADIR" "$WORK/argo-cd"
chmod -R u+w "$WORK/argo-cd"
rm -rf "$WORK/argo-cd/ui/dist/app"
cp -r "$UIDIST" "$WORK/argo-cd/ui/dist/app"
go mod edit -replace "$MOD=./argo-cd"
log "embedding the web UI from $UIDIST ($(du -sh "$UIDIST" | cut -f1))"

if [ -x "$OUT/argocd" ]; then
  log "argocd v$VERSION: cached without the web UI: rebuilding it with the UI"
fi
log "building argocd v$VERSION (takes ~6-8 min on 2 cores when not cached)..."
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
