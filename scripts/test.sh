#!/usr/bin/env bash
# Set everything up and run every test. CI calls this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}; chmod 700 "$XDG_RUNTIME_DIR"

echo "== format and lints"
cargo fmt --check
cargo clippy --release --all-targets -- -D warnings
cargo clippy --release --lib --tests --target wasm32-unknown-unknown -- -D warnings

echo "== wasm32 build of the library"
cargo build --release --lib --target wasm32-unknown-unknown

echo "== unit and integration tests"
# The kernel tests also write every kernel they build here (src/gpu/tests.rs).
WGSL_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}/wgsl-tests")
rm -rf "$WGSL_DIR"; mkdir -p "$WGSL_DIR"
WEBGGUF_TEST_WGSL=$WGSL_DIR cargo test --release

echo "== those kernels through Chrome's WGSL compiler, subgroups and f16 on (tests/tint/check.mjs)"
bash scripts/test-tint.sh "$WGSL_DIR"

echo "== CLI contract against llama.cpp's references (../shared/tools/refcheck.py)"
if [ -d ../shared/reference ]; then
  BIN=${CARGO_TARGET_DIR:-target}/release/webgguf
  SMOL=.cache/SmolLM2-135M-Instruct.Q4_1.gguf
  GEMMA=.cache/gemma-3-270m-q4_k_m.gguf
  refcheck() {
    python3 ../shared/tools/refcheck.py "$BIN" "$1" "../shared/reference/$2.json" ../shared/models \
      --smollm2 "$SMOL" --model "gemma-3-270m-q4_k_m.gguf=$GEMMA"
  }
  for refs in greedy synth256 synthqwen2 synthqwen3 synthgemma3 synthphi3 synthllama3 gemma3-270m; do
    refcheck cpu "$refs"
  done
  # The GPU (lavapipe) through the CLI on each architecture's small oracle;
  # tests/reference_gpu.rs checks every file natively, the real models too.
  for refs in synthqwen3 synthgemma3 synthphi3 synthllama3; do
    refcheck gpu "$refs"
  done
elif [ "${CI:-}" = "true" ]; then
  echo "../shared is missing, and CI=true requires it" >&2; exit 1
else
  echo "SKIPPED: ../shared is absent"
fi
echo "== npm package: wasm-pack build, .d.ts check, npm pack + install"
bash scripts/build-web.sh
bash scripts/test-package.sh

echo "== browser tests in headless Chromium (wasm-pack test, tests/web.rs)"
bash scripts/test-web.sh

echo "== demo page end to end (playwright-core, tests/e2e/demo.mjs)"
bash scripts/test-e2e.sh

echo "== OpenAI endpoint with the openai npm client in headless Chromium (tests/e2e/openai.mjs)"
bash scripts/test-openai.sh

echo "== all tests passed"
