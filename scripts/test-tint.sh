#!/usr/bin/env bash
# bash scripts/test-tint.sh DIR: every kernel in DIR (written there by the
# kernel tests with WEBGGUF_TEST_WGSL=DIR) through Chrome's WGSL compiler
# with subgroups and f16 on (tests/tint/check.mjs says why), after
# installing tests/tint's npm package (Dawn's node bindings).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d tests/tint/node_modules ] || [ tests/tint/package-lock.json -nt tests/tint/node_modules ]; then
  . scripts/fetch.sh
  (cd tests/tint && fetch npm ci --no-audit --no-fund)
fi
node tests/tint/check.mjs "$1"
