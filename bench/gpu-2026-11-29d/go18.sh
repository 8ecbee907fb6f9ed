#!/usr/bin/env bash
# The device budget's last ~6 minutes: every llama-3.2-1b file side by
# side with llama.cpp CUDA (prebuilt, as go17.sh), main fbd7827 (glu_q
# on), then extra18.sh: our bench with glu_q off on two of them.
#   bash bench/gpu-2026-11-29d/go18.sh SECONDS   (carry ['.sbs'])
set -u
export SHAPES='llama-3.2-1b' QUANTS='Q4_0 Q8_0 Q6_K Q4_K_M Q5_K_M IQ4_XS F16'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-280}"; fi
. "$H"/../sbs-common.sh
sbs_llama_src
sbs_unpack webgguf
sbs_vulkan
sbs_prebuilt
sbs_after "$H"/extra18.sh
exec bash .sbs/device.sh "${1:-280}"
