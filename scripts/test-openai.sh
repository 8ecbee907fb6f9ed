#!/usr/bin/env bash
# The OpenAI-compatible endpoint (model.openaiFetch) in headless Chromium with
# the real `openai` npm client (tests/e2e/openai.mjs). Needs a built pkg/,
# tests/e2e/node_modules and ../shared (stories260K for the WebGPU check).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d ../shared/models ]; then
  if [ "${CI:-}" = "true" ]; then echo "../shared is missing, and CI=true requires it" >&2; exit 1; fi
  echo "SKIPPED: ../shared is absent"; exit 0
fi
port=${WEBGGUF_OPENAI_PORT:-8733}
node scripts/serve.mjs --port "$port" --mount /e2e=tests/e2e --mount /shared=../shared >/dev/null &
server=$!
trap 'kill $server' EXIT
sleep 0.5
node tests/e2e/openai.mjs "http://127.0.0.1:$port"
