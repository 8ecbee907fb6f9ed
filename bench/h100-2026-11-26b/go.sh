#!/usr/bin/env bash
# One device run (2026-11-26b; run twice: at 2989ad4 with AB=1, and at 9162ccc with AB=0 into sbs-final/), from the repository root, carry ['.sbs']:
#   AB=1 SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/h100-2026-11-26b/go.sh SECONDS
# Starts the side-by-side kit (../shared/tools/gpu-side-by-side, copied into
# .sbs by its prepare.sh) with two hooks patched into its pipeline: its
# quantize step waits for ab9.sh, which runs while llama.cpp's CUDA build
# (nice 19) is the only other load and the GPU is idle (ab9.sh: merge and split lengths); and extra.sh runs
# after its benches (profiles of every 8B file, depth, int prefill on real
# files). Then polls like the kit. A second call on the same warm machine
# only polls. AB=0 skips ab9.sh.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
T0=$(date +%s)
sed -i '/^log "build rc=/a while [ ! -f /tmp/ab.done ]; do sleep 2; done; log "ab9.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra.sh' .sbs/pipeline.sh
cp "$H"/extra.sh .sbs/
bash .sbs/device.sh 1 > /dev/null 2>&1
# the kit measures bandwidth first: wait until it has, then the GPU is ours
while ! grep -q "HBM through CUDA" /tmp/res/pipeline.log 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt 120 ]; do sleep 2; done
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# AB=0: the side-by-side alone (the final run of the session)
[ "${AB:-1}" = 1 ] && START=$(date +%s) bash "$H"/ab9.sh > /tmp/res/ab.log 2>&1
touch /tmp/ab.done
left=$(( ${1:-540} - ($(date +%s) - T0) )); [ $left -lt 5 ] && left=5
exec bash /tmp/sbs/poll.sh $left
