#!/usr/bin/env bash
# One device run (2026-11-26e, binary b654c84), from the repository root, carry ['.sbs']:
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/h100-2026-11-26e/go.sh SECONDS
# Starts the side-by-side kit (../shared/tools/gpu-side-by-side, copied into
# .sbs by its prepare.sh) with extra.sh patched into its pipeline after its
# benches (profiles, depth on both engines), then polls like the kit. A
# second call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra.sh' .sbs/pipeline.sh
cp "$H"/extra.sh .sbs/
exec bash .sbs/device.sh "${1:-540}"
