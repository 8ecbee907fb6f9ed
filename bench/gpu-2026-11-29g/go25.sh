#!/usr/bin/env bash
# One device call (~5 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from main with own_x.wgsl's quantizing loops one vec4 at a time, and
# .sbs/tests-lib.gz, its library tests): the real-layout llama-3.2-1b
# files whose gate/up takes glu_q, side by side with llama.cpp CUDA (the
# prebuilt binaries; Q8_0 and F16, which own x does not touch, left out).
# While llama.cpp quantizes, next25.sh: glu_q's tests and the decode
# list's on the H200; after the benches, extra24.sh (go24.sh's; it ran
# here as a copy named extra25.sh): our bench on the same files with
# WEBGGUF_GPU_OWN_X=0 (the quantize pass) and then the default.
#   bash bench/gpu-2026-11-29g/go25.sh SECONDS
set -u
export SHAPES='llama-3.2-1b' QUANTS='Q4_0 Q6_K Q4_K_M Q5_K_M IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-330}" "$H"/next25.sh "$H"/extra24.sh webgguf tests-lib
