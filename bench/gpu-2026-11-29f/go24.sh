#!/usr/bin/env bash
# One device call (~5 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from main 23748aa (padded Q3_K, its per-unit decoders on whole words)
# and .sbs/webgguf-base.gz from fc8e7f8's code, before the padding): the
# real-layout 8B Q3_K_M and Q2_K side by side with llama.cpp CUDA. While
# llama.cpp quantizes, next24.sh: pp512 and tg64 of both binaries on the
# synthetic 8B Q3_K; after the benches, extra24.sh: the base binary on
# both real files.
#   bash bench/gpu-2026-11-29f/go24.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='Q3_K_M Q2_K'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next24.sh "$H"/extra24.sh webgguf webgguf-base
