#!/usr/bin/env bash
# One device call (~8 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from the padded Q3_K change, .sbs/webgguf-base.gz from main before it
# (fc8e7f8's code) and .sbs/tests-lib.gz, the change's library tests):
# the real-layout 8B Q3_K_M side by side with llama.cpp CUDA. While
# llama.cpp quantizes (the GPU idle), next23.sh: the new binary against
# the base on synthetic Q3_K (8B, 1B) and Q2_K/Q4_K beside, a profile,
# and every gpu:: test; after the benches, extra23.sh: the base binary
# on the real file, and profiles of both.
#   bash bench/gpu-2026-11-29f/go23.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='Q3_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next23.sh "$H"/extra23.sh webgguf webgguf-base tests-lib
