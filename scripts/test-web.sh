#!/usr/bin/env bash
# The browser tests (tests/web.rs) in headless Chromium via wasm-pack, with
# models and llama.cpp's references served by scripts/serve.mjs. Needs
# `scripts/setup.sh --browser`. Extra arguments go to the test binary
# (e.g. a test-name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.cache/tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
# SwiftShader runs WebGPU on the CPU: some tests take minutes. The runner's
# timeout covers the whole suite, not one test: Gemma 3 270M teacher-forced
# on SwiftShader (33 single-token steps through a 262k-row LM head) alone
# took over 15 minutes on a loaded 2-core machine, and 900 s ended CI's run
# of all the tests before it finished. 2700 s leaves room for both.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-2700}
if [ -d ../shared/reference ]; then
  port=${WEBGGUF_TEST_PORT:-8731}
  # A split model for the URL-list test: stories260K in llama.cpp's
  # gguf-split layout, written by our own splitter.
  split=.cache/split
  mkdir -p "$split"
  cargo run -q --release --bin webgguf -- split --max-tensors 20 \
    ../shared/models/stories260K.F32.gguf "$split/stories260K.F32" >/dev/null
  node scripts/serve.mjs --cors --port "$port" --mount /shared=../shared --mount /cache=.cache >/dev/null &
  server=$!
  trap 'kill $server' EXIT
  export WEBGGUF_TEST_SERVER=http://127.0.0.1:$port
elif [ "${CI:-}" = "true" ]; then
  echo "../shared is missing, and CI=true requires it" >&2; exit 1
fi
if [ $# -gt 0 ]; then set -- -- "$@"; fi
wasm-pack test --headless --chrome --release --mode no-install -- --test web "$@"
