#!/usr/bin/env bash
# One device call (~7 minutes; carry ['.sbs'] with .sbs/webgguf.gz built
# with WEBGGUF_GPU_MV_ZERO): the matvec kernels' workgroup memory zeroed
# at each workgroup's start (WGSL's default, the driver's work) or not.
# While llama.cpp quantizes the real-layout 8B IQ4_XS (GPU idle),
# next21.sh: both ways on synthetic files, three rounds; then the side by
# side, and extra21.sh: both ways on the real file, greedy ids compared,
# and profiles.
#   bash bench/gpu-next/go21.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-470}"; fi
. "$H"/../sbs-common.sh
sbs_llama_src
sbs_unpack webgguf
sbs_vulkan
sbs_diag webgguf
sbs_prebuilt
sbs_patch "$H"/next21.sh "$H"/extra21.sh
exec bash .sbs/device.sh "${1:-470}"
