#!/usr/bin/env bash
# Installs and builds everything the real test stack needs (see test/stack):
# apt packages, kube-apiserver/kube-controller-manager/kubectl, and each Argo CD
# version the stack can run (ARGOCD_VERSION picks one at test time) with its web
# UI embedded and the kustomize it ships, helm, the Argo CD operator and Prometheus.
# ARGOCD_VERSIONS="3.5.1" limits the build to some of them.
# Idempotent and fast when everything is cached.
#
# On a cold machine the web UIs (node: one core, and the network) build beside
# kube (go: both cores), and each Argo CD links once, after its UI. The order is
# the order tests need things in: kube first (API-server tests), then Argo CD
# 3.5.1 (e2e), helm and the operator (install tests), 2.14.21 last (the e2e's
# second pass). While it runs, $CACHE/.building holds its pid: tests started
# beside it (hack/test.sh) wait for the binaries they need (test/stack).
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
export GITOPS_SERVICE_CACHE="$CACHE"

# Argo CD version -> kustomize version of its hack/tool-versions.sh
# (keep in sync with kustomizeVersions in test/stack/binaries.go).
declare -A KUSTOMIZE=([2.14.21]=5.4.3 [3.5.1]=5.8.1)
VERSIONS="${ARGOCD_VERSIONS:-3.5.1 2.14.21}"
for v in $VERSIONS; do
  [ -n "${KUSTOMIZE[$v]:-}" ] || { echo "[test-stack] ERROR: unknown Argo CD version $v (known: ${!KUSTOMIZE[*]})" >&2; exit 1; }
done

start=$(date +%s)
mkdir -p "$CACHE"
echo $$ >"$CACHE/.building"
ui_pid=
prom_pid=
cleanup() {
  [ -z "$ui_pid" ] || kill "$ui_pid" 2>/dev/null || true
  [ -z "$prom_pid" ] || kill "$prom_pid" 2>/dev/null || true
  # only ours: a second test-stack.sh may have started since
  if [ "$(cat "$CACHE/.building" 2>/dev/null)" = "$$" ]; then rm -f "$CACHE/.building"; fi
}
trap cleanup EXIT

"$HACK/install-deps.sh"
(
  for v in $VERSIONS; do
    ARGOCD_VERSION="$v" "$HACK/build-argocd-ui.sh"
  done
) &
ui_pid=$!
"$HACK/build-kube.sh"
# Prometheus (the analysis tests) builds in the background beside the rest;
# test/stack waits for it while this script runs.
"$HACK/build-prometheus.sh" &
prom_pid=$!
for v in $VERSIONS; do
  KUSTOMIZE_VERSION="${KUSTOMIZE[$v]}" "$HACK/build-kustomize.sh"
done
wait_ui() {
  if [ -n "$ui_pid" ]; then
    wait "$ui_pid" || { ui_pid=; echo "[test-stack] ERROR: building Argo CD's web UI failed (its output is above, prefixed [argocd-ui])" >&2; exit 1; }
    ui_pid=
  fi
}
first=1
for v in $VERSIONS; do
  # the UIs are built one after the other; build-argocd.sh would build a missing one itself
  [ "$first" = 1 ] || wait_ui
  if [ "$first" = 1 ]; then
    # the first version's UI is done when its dist/app is there (the next one may still build)
    until [ -f "$CACHE/argocd-ui-v$v/dist/app/index.html" ] || ! kill -0 "$ui_pid" 2>/dev/null; do sleep 5; done
  fi
  ARGOCD_VERSION="$v" "$HACK/build-argocd.sh"
  if [ "$first" = 1 ]; then
    # helm and the Argo CD operator's controller, for the Helm and operator install paths'
    # tests (test/install/helm_test.go, operator_test.go).
    "$HACK/build-helm.sh"
    "$HACK/build-argocd-operator.sh"
    first=0
  fi
done
wait_ui
wait "$prom_pid" || { prom_pid=; echo "[test-stack] ERROR: building Prometheus failed (its output is above, prefixed [prometheus])" >&2; exit 1; }
prom_pid=
echo "[test-stack] ready in $(( $(date +%s) - start ))s; cache: $CACHE"
echo "$CACHE"
