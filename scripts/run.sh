#!/usr/bin/env bash
# Set everything up and run the main job: build the npm package, serve the
# demo page (www/) on localhost with the default model (SmolLM2-135M-Instruct
# Q4_1), and print the URL. Ctrl-C stops the server.
# Usage: scripts/run.sh [--port N]   (default 8080)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --web
bash scripts/build-web.sh >/dev/null
exec node scripts/serve.mjs "$@"
