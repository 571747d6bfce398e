#!/usr/bin/env bash
# `make release VERSION=vX.Y.Z`: everything a platform installs a release from, into
# bin/release/<version>/ (docs/release.md lists it):
#   image/               the sidecar's image (`make image`: OCI layout + docker-load tarball)
#   install.yaml         manifests/install rendered, its image pinned to the image's digest
#   install-helm.yaml    the same for an Argo CD installed by its Helm chart (manifests/helm)
#   install-operator.yaml  the same for an Argo CD run by its operator (manifests/operator)
#   uninstall.yaml, uninstall-operator.yaml  the uninstall Jobs (manifests/uninstall,
#                        manifests/operator/uninstall), pinned the same way
#   values-gitops-service.yaml   the Helm values snippet, installer URL and version filled in
#   argocd-gitops-service.yaml   the ArgoCD resource snippet
#   ui-extension-installer.yaml  components/ui-extension-installer's patch, URL filled in
#   extension-gitops-service-<version>.tar.gz, checksums.txt   the UI panel for argocd-extension-installer
#   CHANGELOG.md         this version's entry of CHANGELOG.md (the release fails without one)
#   sbom.spdx.json       SPDX 2.3 SBOM of the sidecar binary in the image (hack/sbom)
#   SHA256SUMS           of all of the above
# Tag-driven: VERSION defaults to the tag on HEAD and must match it when HEAD is tagged.
# RELEASE_IMAGE (registry/name) names the image; PUSH=1 pushes it there (RELEASE_INSECURE=1:
# plain HTTP). RELEASE_URL is where you publish this directory's files: the UI extension's
# EXTENSION_URL points there. Building writes nothing outside bin/: the tree's `git status`
# is checked before and after.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { echo "[release] $*"; }
die() { echo "[release] ERROR: $*" >&2; exit 1; }

tag=$(git describe --tags --exact-match 2>/dev/null || true)
VERSION=${VERSION:-$tag}
[ -n "$VERSION" ] || die "no VERSION and no tag on HEAD: tag the release (git tag vX.Y.Z) or pass VERSION=vX.Y.Z"
[[ "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION=$VERSION is not vMAJOR.MINOR.PATCH[-PRERELEASE]"
[ -z "$tag" ] || [ "$tag" = "$VERSION" ] || die "HEAD is tagged $tag, not $VERSION"
grep -qE "^## \[?${VERSION//./\\.}\]?( |$)" CHANGELOG.md || die "CHANGELOG.md has no entry '## $VERSION': write it first"

RELEASE_IMAGE=${RELEASE_IMAGE:-ghcr.io/gitops-service/gitops-service}
RELEASE_URL=${RELEASE_URL:-https://github.com/gitops-service/gitops-service/releases/download/$VERSION}
RELEASE_URL=${RELEASE_URL%/}
CACHE="${GITOPS_SERVICE_CACHE:-$HOME/.cache/gitops-service}"
KUBECTL=${KUBECTL:-$(command -v kubectl || ls "$CACHE"/kube-v*/bin/kubectl 2>/dev/null | tail -1 || true)}
[ -x "$KUBECTL" ] || die "no kubectl (for its kustomize): put one on PATH, set KUBECTL, or run make test-stack"

status_before=$(git status --porcelain --untracked-files=all)
OUT="$ROOT/bin/release/$VERSION"
rm -rf "$OUT"
mkdir -p "$OUT"

log "image $RELEASE_IMAGE:$VERSION"
# IMAGE= and PUSH= empty: the image target neither pushes nor points a kustomization at it;
# the push below is of exactly this layout.
make -s image VERSION="$VERSION" IMAGE_DIR="$OUT/image" IMAGE= PUSH= >&2
digest=$(go -C hack/image run ./push -layout "$OUT/image/oci" -digest-only)
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || die "image digest: $digest"
if [[ "${PUSH:-}" =~ ^(1|true|yes)$ ]]; then
  pushed=$(go -C hack/image run ./push -layout "$OUT/image/oci" -image "$RELEASE_IMAGE:$VERSION" \
    $([[ "${RELEASE_INSECURE:-}" =~ ^(1|true|yes)$ ]] && echo -insecure))
  [ "$pushed" = "$digest" ] || die "pushed $pushed, built $digest"
  log "pushed $RELEASE_IMAGE:$VERSION@$digest"
fi

# The install manifests, each from a throw-away kustomization that pins the image by digest.
work="$OUT/.kustomize"
for path in install:install helm:install-helm operator:install-operator uninstall:uninstall operator/uninstall:uninstall-operator; do
  dir="$work/${path#*:}"
  mkdir -p "$dir"
  cat >"$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../../../../manifests/${path%%:*}
images:
- name: gitops-service
  newName: $RELEASE_IMAGE
  digest: $digest
YAML
  "$KUBECTL" kustomize "$dir" >"$OUT/${path#*:}.yaml"
  grep -q "image: $RELEASE_IMAGE@$digest" "$OUT/${path#*:}.yaml" || die "${path#*:}.yaml is not pinned to $digest"
done
rm -rf "$work"

log "UI extension tarball"
go run ./hack/uiextension -version "$VERSION" -out "$OUT" >&2

# The snippets and the installer patch, with this release's URL and version.
dev_url="https://github.com/gitops-service/gitops-service/releases/download/v0.1.0"
fill() { sed -e "s#${dev_url}#${RELEASE_URL}#g" -e "s#\bv0\.1\.0\b#${VERSION}#g" "$1" >"$2"; }
fill manifests/helm/values-gitops-service.yaml "$OUT/values-gitops-service.yaml"
fill manifests/operator/argocd-gitops-service.yaml "$OUT/argocd-gitops-service.yaml"
installer=
for f in argocd-server-patch.yaml argocd-server.yaml; do
  [ -n "$installer" ] || [ ! -f "manifests/install/components/ui-extension-installer/$f" ] ||
    installer="manifests/install/components/ui-extension-installer/$f"
done
[ -n "$installer" ] || die "no argocd-server patch in components/ui-extension-installer"
fill "$installer" "$OUT/ui-extension-installer.yaml"
grep -q "$RELEASE_URL/extension-gitops-service-$VERSION.tar.gz" "$OUT/values-gitops-service.yaml" || die "values snippet: installer URL not filled in"

awk -v v="$VERSION" '
  /^## / { if (on) exit; if ($2 == v || $2 == "[" v "]") on = 1 }
  on { print }' CHANGELOG.md >"$OUT/CHANGELOG.md"

log "SBOM"
go run ./hack/sbom -binary "$OUT/image/gitops-service" -name gitops-service -version "$VERSION" \
  -created "$(git log -1 --format=%cI | sed 's/+00:00$/Z/')" -out "$OUT/sbom.spdx.json"

(cd "$OUT" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

status_after=$(git status --porcelain --untracked-files=all)
[ "$status_before" = "$status_after" ] || die "building the release changed the tree:
$(diff <(echo "$status_before") <(echo "$status_after") || true)"
log "bin/release/$VERSION: image $RELEASE_IMAGE@$digest"
log "publish the files of bin/release/$VERSION at $RELEASE_URL/"
