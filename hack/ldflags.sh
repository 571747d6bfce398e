#!/usr/bin/env bash
# The version stamped into the sidecar and the CLI (extension/buildinfo):
#   hack/ldflags.sh            the -ldflags -X flags
#   hack/ldflags.sh version    `git describe --tags --always --dirty`, or "dev" without git
#   hack/ldflags.sh revision   the commit, or "unknown"
# VERSION / REVISION in the environment override. Shared by the Makefile
# (build, image) and test/stack, so tests run what `make build` builds.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}
version=${version:-dev} revision=${revision:-unknown}
pkg=github.com/gitops-service/gitops-service/extension/buildinfo
case "${1:-}" in
version) echo "$version" ;;
revision) echo "$revision" ;;
*) echo "-X $pkg.Version=$version -X $pkg.Revision=$revision" ;;
esac
