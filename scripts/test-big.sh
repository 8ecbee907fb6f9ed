#!/usr/bin/env bash
# Opt-in (not run by CI: 4.4 GB on disk, minutes on SwiftShader): a synthetic
# TinyLlama in F32, past wasm32's 4 GiB, loaded by URL onto WebGPU in headless
# Chromium (tests/web.rs, a_model_past_4_gb_streams_onto_webgpu).
set -euo pipefail
cd "$(dirname "$0")/.."
big=.cache/big-tinyllama-f32.gguf
[ -f "$big" ] || cargo run -q --release --bin webgguf -- synth tinyllama-1.1b:F32 "$big"
bash scripts/test-web.sh a_model_past_4_gb
