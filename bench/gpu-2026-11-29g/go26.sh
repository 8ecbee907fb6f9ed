#!/usr/bin/env bash
# One device call (~3 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from main 9136ed7): real-layout TinyLlama files side by side with
# llama.cpp CUDA (the prebuilt binaries); after the benches, extra26.sh:
# our bench on the same files with glu_q from 8,192 outputs as before
# (WEBGGUF_GPU_GLU_Q_MIN=8192: both quantize passes) and then the default.
#   bash bench/gpu-2026-11-29g/go26.sh SECONDS
set -u
export SHAPES='tinyllama-1.1b' QUANTS='Q4_0 Q4_K_M IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-240}" "$H"/next26.sh "$H"/extra26.sh webgguf
