#!/usr/bin/env bash
# The session's last device call (~9 minutes): main fbd7827 (glu_q on)
# side by side with llama.cpp CUDA on real-layout 8B files, llama.cpp from
# the prebuilt binaries (bench/llama-prebuilt.md; their first run on a
# GPU), the quick-to-quantize files first; while llama.cpp quantizes,
# next17.sh runs the glu_q and integer-path tests; after the benches,
# extra17.sh runs our benches again with glu_q off, and the profiles.
#   bash bench/gpu-2026-11-29d/go17.sh SECONDS   (carry ['.sbs'])
set -u
export SHAPES='llama-3.1-8b' QUANTS='Q4_0 Q4_K_M IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-490}"; fi
. "$H"/../sbs-common.sh
sbs_llama_src
sbs_unpack webgguf tests-lib
sbs_vulkan
sbs_diag webgguf
sbs_prebuilt
sbs_patch "$H"/next17.sh "$H"/extra17.sh
exec bash .sbs/device.sh "${1:-490}"
