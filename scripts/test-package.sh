#!/usr/bin/env bash
# The npm package as a user gets it: the .d.ts type-checks a usage file
# (tsc --noEmit), and `npm pack` of pkg/ installs into a fresh folder and
# reproduces llama.cpp's greedy ids there (under Node, on the CPU fallback).
# Needs a built pkg/ (scripts/build-web.sh) and tests/e2e/node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
echo "-- tsc --noEmit on tests/e2e/types-check/usage.ts"
tests/e2e/node_modules/.bin/tsc -p tests/e2e/types-check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "-- npm pack pkg/ and install into $work"
(cd pkg && npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/webgguf-*.tgz)
tar -tzf "$tarball" | sed 's/^/   /'
mkdir "$work/app"
cp tests/e2e/installed.mjs "$work/app/"
(cd "$work/app" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "$tarball" >/dev/null)
if [ -d ../shared/reference ]; then
  (cd "$work/app" && node installed.mjs "$ROOT/../shared/models/stories260K.F32.gguf" "$ROOT/../shared/reference/greedy.json")
elif [ "${CI:-}" = "true" ]; then
  echo "../shared is missing, and CI=true requires it" >&2; exit 1
else
  echo "SKIPPED: ../shared is absent"
fi
