#!/usr/bin/env bash
# The side-by-side run (2026-11-27b: few.wgsl for decode attention below 64
# keys, round_f16 branch-free), from the repository root, carry ['.sbs']
# (the kit, ../shared/tools/gpu-side-by-side/prepare.sh, with the new CLI,
# e613703, as .sbs/webgguf and main's, bf15c17's code, as
# .sbs/webgguf-main.gz):
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M IQ4_XS F16' bash bench/gpu-2026-11-27b/go6.sh SECONDS
# extra6.sh is patched into the kit's pipeline after its benches. A second
# call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
gunzip -kf .sbs/webgguf-main.gz && chmod +x .sbs/webgguf-main
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra6.sh' .sbs/pipeline.sh
cp "$H"/extra6.sh .sbs/
exec bash .sbs/device.sh "${1:-540}"
