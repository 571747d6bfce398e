#!/usr/bin/env bash
# Builds Argo CD's web UI (the ui/ folder of the Argo CD Go module) into
# $GITOPS_SERVICE_CACHE/argocd-ui-v$VERSION/dist/app, for build-argocd.sh to embed
# into argocd-server (it serves page loads from the dist/app embedded at build time).
#
#   ARGOCD_VERSION=2.14.21 hack/build-argocd-ui.sh   # or 3.5.1 (the default)
#
# hack/test-stack.sh runs it before build-argocd.sh, so a cold machine links argocd
# once, with the UI. The build skips source maps (the embedded UI is not debugged
# here) and prints how long install and build took.
#
# Everything comes from the project's scripts: nodejs/npm from apt (install-deps.sh),
# the package manager the ui/ uses (yarn classic for 2.x's yarn.lock, pnpm at its
# packageManager version for 3.x's pnpm-lock.yaml) installed with npm into the cache,
# the npm packages from the registry through a store in the cache dir, and argo-ui
# (the lock file pins a GitHub commit build machines cannot reach) from the git bundle
# in ../shared/vendor/argo-ui: yarn clones it through a git url rewrite; pnpm fetches
# a codeload tarball, so the copy's lock file is pointed at a tarball made from the
# bundle. Skips everything when dist/app is already built. node_modules never leave
# the temp dir.
set -euo pipefail

VERSION="${ARGOCD_VERSION:-3.5.1}"
MOD="github.com/argoproj/argo-cd/v${VERSION%%.*}"
YARN_VERSION=1.22.22

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HACK/.." && pwd)"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
OUT="$CACHE/argocd-ui-v$VERSION"
# Package managers, their stores and the argo-ui clone, shared by the versions.
TOOLS="$CACHE/argocd-ui-tools"
# ../shared beside the repository; for a git worktree, beside the main checkout.
BUNDLE="${ARGO_UI_BUNDLE:-$REPO/../shared/vendor/argo-ui/argo-ui.bundle}"
if [ ! -f "$BUNDLE" ] && [ -z "${ARGO_UI_BUNDLE:-}" ]; then
  common="$(git -C "$REPO" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
  if [ -n "$common" ] && [ -f "$common/../../shared/vendor/argo-ui/argo-ui.bundle" ]; then
    BUNDLE="$(cd "$common/../../shared/vendor/argo-ui" && pwd)/argo-ui.bundle"
  fi
fi

log() { echo "[argocd-ui] $*"; }

if [ -f "$OUT/dist/app/index.html" ]; then
  log "Argo CD UI v$VERSION: cached ($OUT/dist/app)"
  exit 0
fi

# The module's source (its ui/ folder), from the Go module cache; outside any module.
MODDIR="$(cd / && GOWORK=off GOFLAGS= go mod download -json "$MOD@v$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$MODDIR/ui/package.json" ] || { log "ERROR: $MODDIR/ui/package.json not found" >&2; exit 1; }
[ -f "$BUNDLE" ] || {
  log "ERROR: the argo-ui git bundle is missing: $BUNDLE (expected ../shared/vendor/argo-ui/ beside the repository; set ARGO_UI_BUNDLE)" >&2
  exit 1
}
for b in go node npm git; do
  command -v "$b" >/dev/null 2>&1 || { log "ERROR: $b is not on PATH (hack/install-deps.sh installs it)" >&2; exit 1; }
done

# The package manager, from the npm registry into the cache (not installed globally).
if [ -f "$MODDIR/ui/pnpm-lock.yaml" ]; then
  PM=pnpm
  PM_VERSION="$(sed -n 's/^[[:space:]]*"packageManager": "pnpm@\([0-9.]*\).*/\1/p' "$MODDIR/ui/package.json")"
  PM_VERSION="${PM_VERSION:-10.28.1}"
else
  PM=yarn
  PM_VERSION=$YARN_VERSION
fi
PMBIN="$TOOLS/$PM-$PM_VERSION/node_modules/.bin/$PM"
if [ ! -x "$PMBIN" ]; then
  log "installing $PM $PM_VERSION with npm into $TOOLS/$PM-$PM_VERSION..."
  mkdir -p "$TOOLS/$PM-$PM_VERSION"
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/$PM-$PM_VERSION" "$PM@$PM_VERSION"
fi

# argo-ui: a bare clone of the bundle; git (and so yarn) is pointed at it instead of GitHub.
ARGOUI="$TOOLS/argo-ui.git"
if [ ! -d "$ARGOUI" ]; then
  log "cloning argo-ui from $BUNDLE..."
  mkdir -p "$TOOLS"
  git clone -q --bare "$BUNDLE" "$ARGOUI.tmp.$$"
  # yarn clones the default branch and pulls master: give the bundle's only branch that name.
  git -C "$ARGOUI.tmp.$$" branch -f master pinned
  git -C "$ARGOUI.tmp.$$" symbolic-ref HEAD refs/heads/master
  mv "$ARGOUI.tmp.$$" "$ARGOUI"
fi
export GIT_CONFIG_COUNT=1 \
  GIT_CONFIG_KEY_0="url.file://$ARGOUI.insteadOf" \
  GIT_CONFIG_VALUE_0=https://github.com/argoproj/argo-ui.git

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gitops-service-argocd-ui.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cp -r "$MODDIR/ui" "$WORK/ui"
chmod -R u+w "$WORK/ui"
cd "$WORK/ui"

# webpack needs ~2 GB; the default heap limit can be lower on small machines.
export NODE_OPTIONS="--max-old-space-size=3072 ${NODE_OPTIONS:-}"
NICE=(nice -n 10)

log "$PM install (first time 1-3 min, later from the store in $TOOLS)..."
start=$(date +%s)
if [ "$PM" = pnpm ]; then
  # pnpm fetches GitHub dependencies as codeload tarballs: serve argo-ui's from the bundle.
  for sha in $(grep -o 'codeload.github.com/argoproj/argo-ui/tar.gz/[0-9a-f]\{40\}' pnpm-lock.yaml | sed 's|.*/||' | sort -u); do
    tgz="$TOOLS/argo-ui-$sha.tgz"
    if [ ! -f "$tgz" ]; then
      git -C "$ARGOUI" archive --format=tar.gz --prefix="argo-ui-$sha/" -o "$tgz.tmp.$$" "$sha"
      mv "$tgz.tmp.$$" "$tgz"
    fi
    sed -i "s|resolution: {tarball: https://codeload.github.com/argoproj/argo-ui/tar.gz/$sha}|resolution: {tarball: file:$tgz}|" pnpm-lock.yaml
  done
  "${NICE[@]}" "$PMBIN" install --frozen-lockfile --store-dir "$TOOLS/pnpm-store" --config.confirmModulesPurge=false --reporter=append-only | sed "/^Progress: /d"
else
  export YARN_CACHE_FOLDER="$TOOLS/yarn-cache"
  "${NICE[@]}" "$PMBIN" install --frozen-lockfile --non-interactive --network-timeout 600000 --no-progress
fi
log "$PM install done in $(( $(date +%s) - start ))s"

log "webpack (2-4 min on 2 cores, longer on a busy machine)..."
start=$(date +%s)
# The package.json build script without source maps (they double the work and size);
# NODE_ENV as Argo CD's own image build sets it.
rm -rf dist/app && mkdir -p dist/app
NODE_ENV=production "${NICE[@]}" node_modules/.bin/webpack --config ./src/app/webpack.config.js --mode production --no-devtool
[ -f dist/app/index.html ] || { log "ERROR: the build produced no dist/app/index.html" >&2; exit 1; }
log "webpack done in $(( $(date +%s) - start ))s ($(du -sh dist/app | cut -f1))"

# Into place by rename: an interrupted copy never looks like a finished UI.
mkdir -p "$OUT"
rm -rf "$OUT/dist.tmp" "$OUT/dist.old"
cp -r dist "$OUT/dist.tmp"
if [ -d "$OUT/dist" ]; then mv "$OUT/dist" "$OUT/dist.old"; fi
mv "$OUT/dist.tmp" "$OUT/dist"
rm -rf "$OUT/dist.old"
log "done: $OUT/dist/app"
