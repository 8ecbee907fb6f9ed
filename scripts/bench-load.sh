#!/usr/bin/env bash
# Load-time benchmark in headless Chromium (tests/e2e/load-bench.mjs):
# SmolLM2 from a URL cold, warm (the cache) and uncached, from bytes, and
# 1 against 4 connections to a server limited to 20 MB/s per connection.
# Needs `scripts/setup.sh --browser`. Not run by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-web.sh >/dev/null
node scripts/serve.mjs --port 8734 --mount /bench=tests/e2e >/dev/null &
a=$!
node scripts/serve.mjs --port 8735 --mount /bench=tests/e2e --rate 20000000 >/dev/null &
b=$!
trap 'kill $a $b' EXIT
sleep 0.5
node tests/e2e/load-bench.mjs "$@"
