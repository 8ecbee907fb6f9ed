#!/usr/bin/env bash
# Prepared for the next session's first device call (~8 minutes, one
# call; carry ['.sbs'] with .sbs/webgguf.gz built from main and
# .sbs/llama-bin.tgz, the prebuilt llama.cpp, remade 2026-11-30b as
# bench/llama-prebuilt.md says): the real-layout 8B IQ4_XS (0.87-0.89x
# at its last side-by-side, 2026-11-29b/29e; +0.9% and +1.4% since on the
# synthetic file) and Q4_K_M side by side with llama.cpp CUDA. Nothing
# runs beside the quantizing (next.sh) or after the benches (extra.sh).
#   bash bench/gpu-next/go.sh SECONDS
# Before the call, here: cargo build --release; strip and gzip the CLI
# as .sbs/webgguf.gz; bash bench/sbs-compact.sh (the carry's room).
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS Q4_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next.sh "$H"/extra.sh webgguf
