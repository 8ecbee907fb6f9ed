#!/usr/bin/env bash
# One device call (~7 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# from the code-book change and .sbs/webgguf-base.gz from main before it):
# the code-book layouts (WEBGGUF_GPU_CODE_BOOK=CxT, wide.wgsl's IQ4L) on
# the 8B IQ4_XS. While llama.cpp quantizes the real-layout file (the GPU
# idle), next20.sh: every layout and main's binary on synthetic 8B IQ4_XS
# and IQ4_NL, interleaved; then the side by side (default layout), and
# extra20.sh: every layout on the real file, and profiles.
#   bash bench/gpu-2026-11-29e/go20.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next20.sh "$H"/extra20.sh webgguf webgguf-base
