#!/usr/bin/env bash
# bash scripts/test-tint.sh DIR: every kernel in DIR (written there by the
# kernel tests with WEBGGUF_TEST_WGSL=DIR) through Chrome's WGSL compiler
# with subgroups and f16 on (tests/tint/check.mjs says why), after
# installing tests/tint's npm package (Dawn's node bindings).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d tests/tint/node_modules ] || [ tests/tint/package-lock.json -nt tests/tint/node_modules ]; then
  # As setup.sh's fetch: once more on failure, and what npm said if that
  # fails too.
  (cd tests/tint && { npm ci --no-audit --no-fund > /tmp/tint-npm.log 2>&1 ||
    { sleep 10; npm ci --no-audit --no-fund > /tmp/tint-npm.log 2>&1; } ||
    { tail -n 30 /tmp/tint-npm.log >&2; exit 1; }; })
fi
node tests/tint/check.mjs "$1"
