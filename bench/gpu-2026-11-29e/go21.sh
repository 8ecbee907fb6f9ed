#!/usr/bin/env bash
# One device call (~7 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# with WEBGGUF_GPU_MV_ZERO): the matvec kernels' workgroup memory zeroed
# at each workgroup's start (WGSL's default, the driver's work) or not.
# While llama.cpp quantizes the real-layout 8B IQ4_XS (GPU idle),
# next21.sh: both ways on synthetic files, three rounds; then the side by
# side, and extra21.sh: both ways on the real file, greedy ids compared,
# and profiles.
#   bash bench/gpu-2026-11-29e/go21.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-470}" "$H"/next21.sh "$H"/extra21.sh webgguf
