#!/usr/bin/env bash
# The demo page end to end in headless Chromium (tests/e2e/demo.mjs), served
# exactly as scripts/run.sh serves it. The screenshot lands in
# target/e2e/demo.png (a CI artifact). Needs a built pkg/ and tests/e2e/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/e2e
port=${WEBGGUF_E2E_PORT:-8732}
node scripts/serve.mjs --port "$port" >/dev/null &
server=$!
trap 'kill $server' EXIT
sleep 0.5
node tests/e2e/demo.mjs "http://127.0.0.1:$port/" target/e2e/demo.png
