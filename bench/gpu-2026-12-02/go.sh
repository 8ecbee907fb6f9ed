#!/usr/bin/env bash
# 2026-12-02 (carry ['.sbs']): the whole matrix, {llama-3.2-1b,
# llama-3.1-8b} x {Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, Q4_0, Q8_0, F16}, side by
# side with llama.cpp 0c1e570 CUDA (`-fa 1`) in one held machine, main
# 89b4bef's CLI (.sbs/webgguf.gz; the kernels of ecec0fa, Wo and down
# profiled apart) and llama.cpp from .sbs/llama-bin.tgz (remade this
# session, bench/llama-prebuilt.md). While llama-quantize runs (the GPU
# idle) next.sh runs every gpu:: test of main (.sbs/tests-lib.gz) and
# gpu-profile of the synthetic 8B IQ4_XS at depth; after the benches
# extra.sh runs both engines at depth 2048 and 8192 on the 8B IQ4_XS and
# Q4_K_M, and gpu-profile on every 8B file.
#   bash bench/gpu-2026-12-02/go.sh SECONDS     (then again to poll)
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz and the lib's test binary as .sbs/tests-lib.gz; bash
# bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
