#!/usr/bin/env bash
# Installs and builds everything the real test stack needs (see test/stack):
# apt packages, kube-apiserver/kube-controller-manager/kubectl, Argo CD.
# Idempotent and fast when everything is cached.
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
export GITOPS_SERVICE_CACHE="$CACHE"

start=$(date +%s)
"$HACK/install-deps.sh"
"$HACK/build-kube.sh"
"$HACK/build-argocd.sh"
"$HACK/build-kustomize.sh"
echo "[test-stack] ready in $(( $(date +%s) - start ))s; cache: $CACHE"
echo "$CACHE"
