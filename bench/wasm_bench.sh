#!/bin/sh
# Builds examples/wasm_bench.rs for wasm32 with simd128 (as .cargo/config.toml
# sets) and without, and runs both in Node (TurboFan only: --no-liftoff, so
# that timings do not catch functions before they tier up).
# usage: bench/wasm_bench.sh [MODEL.gguf [PP TG REPS]]
# WASM_BENCH_CLOCK=cpu times CPU rather than wall time (for a busy machine).
set -e
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo build --release --target wasm32-unknown-unknown --example wasm_bench
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=-simd128" \
  cargo build --release --target wasm32-unknown-unknown --example wasm_bench \
  --target-dir "$target/nosimd"
for build in "$target/nosimd" "$target"; do
  echo "== $build/wasm32-unknown-unknown/release/examples/wasm_bench.wasm"
  node --no-liftoff bench/wasm_bench.mjs "$build/wasm32-unknown-unknown/release/examples/wasm_bench.wasm" "$@"
done
