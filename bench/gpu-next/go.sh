#!/usr/bin/env bash
# Prepared for the next session's first device call (~8 minutes, one
# call; carry ['.sbs'] with .sbs/webgguf.gz built from main and
# .sbs/llama-bin.tgz, the prebuilt llama.cpp, remade as
# bench/llama-prebuilt.md says; without it llama.cpp builds on the
# device and only QUANTS='IQ4_XS' fits): the real-layout 8B IQ4_XS (0.89x
# with c5d3e3a, 0.90x with 2026-12-01's rounding change on the same
# machine, bench/gpu-2026-12-01) and Q4_K_M side by side with llama.cpp
# CUDA. Nothing runs beside the quantizing (next.sh); after the benches
# extra.sh runs the IQ4_XS file with WEBGGUF_GPU_ROUND_PACK=0.
#   bash bench/gpu-next/go.sh SECONDS
# Before the call, here: cargo build --release; strip and gzip the CLI
# as .sbs/webgguf.gz; bash bench/sbs-compact.sh (the carry's room).
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS Q4_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next.sh "$H"/extra.sh webgguf
