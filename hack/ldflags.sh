#!/usr/bin/env bash
# Prints the -ldflags that stamp the version into the sidecar and the CLI
# (extension/buildinfo). Shared by the Makefile, hack/image and test/stack so a
# test runs what `make build` builds. Without git (or outside a checkout) the
# version is "dev".
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}
pkg=github.com/gitops-service/gitops-service/extension/buildinfo
echo "-X $pkg.Version=${version:-dev} -X $pkg.Revision=${revision:-unknown}"
