#!/usr/bin/env bash
# One device call (~6 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# with the nibble code book, WEBGGUF_GPU_CODE_BOOK=Cx0: the 16 IQ4_NL
# values stored C times, 8 conflict-free lookups a word, against the byte
# table, 1x1). While llama.cpp quantizes the real-layout 8B IQ4_XS (GPU
# idle), next22.sh: the layouts on synthetic 8B IQ4_XS and IQ4_NL; then
# the side by side, and extra22.sh: the layouts on the real file, and
# profiles.
#   bash bench/gpu-2026-11-29e/go22.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next22.sh "$H"/extra22.sh webgguf
