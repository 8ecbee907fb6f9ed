#!/usr/bin/env bash
# One device call (~6 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from the own-x change (glu_q quantizing its own x up to 2,048 columns,
# on by default) and .sbs/tests-lib.gz, its library tests): every
# real-layout llama-3.2-1b file side by side with llama.cpp CUDA (the
# prebuilt binaries). While llama.cpp quantizes, next24.sh: every gpu::
# test on the H200; after the benches, extra24.sh: our bench on the same
# files with WEBGGUF_GPU_OWN_X=0 (the quantize pass, as main before it).
#   bash bench/gpu-2026-11-29g/go24.sh SECONDS
set -u
export SHAPES='llama-3.2-1b' QUANTS='Q4_0 Q8_0 Q6_K Q4_K_M Q5_K_M IQ4_XS F16'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-330}" "$H"/next24.sh "$H"/extra24.sh webgguf tests-lib
