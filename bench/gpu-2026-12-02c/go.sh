#!/usr/bin/env bash
# 2026-12-02c, call 2 (carry ['.sbs']): the whole matrix, {llama-3.2-1b,
# llama-3.1-8b} x {Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, Q4_0, Q8_0, F16}, side by
# side with llama.cpp 0c1e570 CUDA (`-fa 1`, .sbs/llama-bin.tgz) in one
# held machine, with main's CLI as down_q went on by default
# (.sbs/webgguf.gz). While llama-quantize runs (the GPU idle) next.sh A/Bs
# glu_q in 1,024-thread workgroups (2x32) against main's 8x32 on synthetic
# llama-3.2-1b and tinyllama-1.1b files (call 1: +4.2% on the 1B Q4_K, -2
# to -8% on the 8B); after the benches extra.sh runs both engines at depth
# 2048 and 8192 on the 8B IQ4_XS and Q4_K_M, gpu-profile of the 8B IQ4_XS,
# and the same glu_q A/B on the real-layout 1B files.
#   bash bench/gpu-2026-12-02c/go.sh SECONDS     (then again to poll)
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz; bash bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-540}" "$H"/next.sh "$H"/extra.sh webgguf
