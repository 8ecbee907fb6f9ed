#!/usr/bin/env bash
# The side-by-side run (2026-11-27c: mid.wgsl, decode attention from 64
# keys up to 256 in one dispatch), from the repository root, carry
# ['.sbs'] (the kit, ../shared/tools/gpu-side-by-side/prepare.sh, with the
# new CLI as .sbs/webgguf; main's path is the same CLI with
# WEBGGUF_GPU_MID_KEYS=0, see extra7.sh):
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M IQ4_XS F16 Q8_0' bash bench/gpu-2026-11-27c/go7.sh SECONDS
# extra7.sh is patched into the kit's pipeline after its benches. A second
# call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra7.sh' .sbs/pipeline.sh
cp "$H"/extra7.sh .sbs/
exec bash .sbs/device.sh "${1:-540}"
