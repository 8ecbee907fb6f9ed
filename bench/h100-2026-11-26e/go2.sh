#!/usr/bin/env bash
# The second side-by-side run (2026-11-26e, binary bf8c50d: split.wgsl's V
# loads later, split.wgsl from 512 keys, and flash.wgsl's arrays as named
# values, all after the first run), smaller for the device time left, from
# the repository root, carry ['.sbs']:
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q4_0' bash bench/h100-2026-11-26e/go2.sh SECONDS
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra2.sh' .sbs/pipeline.sh
cp "$H"/extra2.sh .sbs/
exec bash .sbs/device.sh "${1:-540}"
