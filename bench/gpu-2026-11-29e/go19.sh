#!/usr/bin/env bash
# Prepared for the next session's first device call (~8 minutes, one
# call; carry ['.sbs'] with .sbs/webgguf.gz and .sbs/tests-lib.gz built
# from main): the 8B files whose last H200 ratios predate glu_q (Q8_0,
# Q6_K, Q5_K_M) side by side with llama.cpp CUDA from the prebuilt
# binaries; while llama.cpp quantizes (the GPU idle), next19.sh: glu_q
# on TinyLlama (below glu_q_min, to decide it) and on the 8B IQ4_XS,
# synthetic, interleaved; after the benches, extra19.sh: glu_q off on
# each file, and the profiles.
#   bash bench/gpu-2026-11-29e/go19.sh SECONDS
# On a machine still held from a call before, first:
#   rm -rf /tmp/sbs /tmp/res /tmp/models /dev/shm/models /tmp/build.rc /tmp/build.log
set -u
export SHAPES='llama-3.1-8b' QUANTS='Q8_0 Q6_K Q5_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next19.sh "$H"/extra19.sh webgguf
