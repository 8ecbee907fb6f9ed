#!/usr/bin/env bash
# In-browser benchmark: webgguf (CPU and WebGPU backends) beside wllama 2.3.7
# in the same page harness, same model (SmolLM2-135M-Instruct Q4_1), same
# headless Chromium. Needs `scripts/setup.sh --browser`. Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-web.sh >/dev/null
port=${BENCH_PORT:-8733}
node scripts/serve.mjs --port "$port" --mount /bench=tests/e2e \
  --mount /wllama=tests/e2e/node_modules/@wllama/wllama/esm >/dev/null &
server=$!
trap 'kill $server' EXIT
sleep 0.5
BENCH_BASE=http://127.0.0.1:$port node tests/e2e/bench.mjs "$@"
