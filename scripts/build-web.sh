#!/usr/bin/env bash
# Build the npm package into pkg/: wasm-pack (--target web, release), then
# pkg.json's npm metadata merged over the generated pkg/package.json.
# Needs the toolchain from `scripts/setup.sh --web`. Extra arguments go to wasm-pack.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.cache/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# --mode no-install: use the wasm-bindgen and wasm-opt on PATH instead of
# downloading them from GitHub (unreachable here).
wasm-pack build --target web --release --mode no-install --out-dir pkg "$@"
node - <<'JS'
const fs = require('fs');
const gen = JSON.parse(fs.readFileSync('pkg/package.json', 'utf8'));
const ours = JSON.parse(fs.readFileSync('pkg.json', 'utf8'));
fs.writeFileSync('pkg/package.json', JSON.stringify({ ...gen, ...ours, version: gen.version }, null, 2) + '\n');
JS
echo "built pkg/ ($(du -h pkg/webgguf_bg.wasm | cut -f1) wasm)"
