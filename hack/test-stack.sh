#!/usr/bin/env bash
# Installs and builds everything the real test stack needs (see test/stack):
# apt packages, kube-apiserver/kube-controller-manager/kubectl, and each Argo CD
# version the stack can run (ARGOCD_VERSION picks one at test time) with its web
# UI embedded and the kustomize it ships, helm and the Argo CD operator. The UI is built first, so a cold
# machine links argocd once, with it. ARGOCD_VERSIONS="3.5.1" limits the build to some of them.
# Idempotent and fast when everything is cached.
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
export GITOPS_SERVICE_CACHE="$CACHE"

# Argo CD version -> kustomize version of its hack/tool-versions.sh
# (keep in sync with kustomizeVersions in test/stack/binaries.go).
declare -A KUSTOMIZE=([2.14.21]=5.4.3 [3.5.1]=5.8.1)
VERSIONS="${ARGOCD_VERSIONS:-2.14.21 3.5.1}"

start=$(date +%s)
"$HACK/install-deps.sh"
"$HACK/build-kube.sh"
for v in $VERSIONS; do
  [ -n "${KUSTOMIZE[$v]:-}" ] || { echo "[test-stack] ERROR: unknown Argo CD version $v (known: ${!KUSTOMIZE[*]})" >&2; exit 1; }
  ARGOCD_VERSION="$v" "$HACK/build-argocd-ui.sh"
  ARGOCD_VERSION="$v" "$HACK/build-argocd.sh"
  KUSTOMIZE_VERSION="${KUSTOMIZE[$v]}" "$HACK/build-kustomize.sh"
done
# helm and the Argo CD operator's controller, for the Helm and operator install paths'
# tests (test/install/helm_test.go, operator_test.go).
"$HACK/build-helm.sh"
"$HACK/build-argocd-operator.sh"
echo "[test-stack] ready in $(( $(date +%s) - start ))s; cache: $CACHE"
echo "$CACHE"
