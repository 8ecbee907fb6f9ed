#!/usr/bin/env bash
# Run both cargo-fuzz targets (fuzz/fuzz_targets) for SECONDS each (default
# 60), one after the other, installing cargo-fuzz first if it is missing.
# Not run by CI (CI runs tests/fuzz_bounded.rs); see fuzz/README.md.
#
#   scripts/fuzz.sh [SECONDS]
#
# Needs a nightly toolchain. Corpora grow in fuzz/corpus/<target>, crashes
# land in fuzz/artifacts/<target>; both are git-ignored. On a shared machine,
# run it as `nice -n 19 scripts/fuzz.sh`.
set -euo pipefail
secs=${1:-60}
cd "$(dirname "$0")/../fuzz"

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo +nightly install cargo-fuzz --locked
fi

models=../../shared/models
mkdir -p corpus/gguf_load corpus/tokenize
cp -n seeds/gguf_load/* corpus/gguf_load/
cp -n seeds/tokenize/* corpus/tokenize/
if [ -f "$models/stories260K.Q4_0.gguf" ]; then
  cp -n "$models/stories260K.Q4_0.gguf" corpus/gguf_load/
fi
# The tokenize target's vocabulary: stories260K (a real SentencePiece
# vocabulary) when ../shared has it, else the synthetic seed's.
if [ -z "${WEBGGUF_FUZZ_VOCAB:-}" ] && [ ! -f "$models/stories260K.Q8_0.gguf" ]; then
  export WEBGGUF_FUZZ_VOCAB=$PWD/seeds/gguf_load/tiny.Q8_0.gguf
fi

# -a: debug assertions and overflow checks. One process, one core; a slow
# input (-timeout) or a large allocation (-rss_limit_mb, which also caps a
# single malloc) fails the run like a panic does.
for target in gguf_load tokenize; do
  echo "== $target: $secs s"
  cargo +nightly fuzz run -a "$target" "corpus/$target" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
  echo "== $target: corpus $(find "corpus/$target" -type f | wc -l) files, $(du -sh --apparent-size "corpus/$target" | cut -f1)"
done
