#!/usr/bin/env bash
# Installs the Debian packages the real test stack needs: etcd, redis, git,
# openssl and CA certificates, Node.js and npm (to build Argo CD's web UI) and Chromium
# (the UI panel's browser test). Idempotent: does nothing when all are present.
set -euo pipefail

PKGS=(etcd-server redis-server git openssl ca-certificates nodejs chromium)

log() { echo "[deps] $*"; }

missing=()
for p in "${PKGS[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    log "$p: already installed"
  else
    missing+=("$p")
  fi
done

# Debian's nodejs comes without npm; other nodejs packages (e.g. NodeSource's) bring
# their own, and Debian's npm would conflict with them.
if command -v npm >/dev/null 2>&1; then
  log "npm: already installed"
else
  missing+=(npm)
fi

if [ "${#missing[@]}" -eq 0 ]; then
  log "all packages present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "missing packages: ${missing[*]}, and apt-get is not available; install them with your package manager" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    log "not root and sudo is not available; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
log "running apt-get update"
"${SUDO[@]}" apt-get update -q
log "installing: ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"

# Debian starts redis-server and etcd as system services on install; the test
# stack runs its own instances on free ports, so the services are not needed.
# They are left alone (stopping them is not this script's business).
for b in etcd redis-server git openssl node npm chromium; do
  if ! command -v "$b" >/dev/null 2>&1; then
    log "ERROR: $b not on PATH after install" >&2
    exit 1
  fi
done
log "done"
