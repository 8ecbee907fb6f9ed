#!/usr/bin/env bash
# The side-by-side run (2026-11-26f, the tensor-core tile's vec4<f16>
# staging and per-product shapes), from the repository root, carry
# ['.sbs'] (webgguf gzipped to fit the carry):
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/h100-2026-11-26f/go3.sh SECONDS
# The kit (../shared/tools/gpu-side-by-side, copied into .sbs by its
# prepare.sh) with extra3.sh patched into its pipeline after its benches.
# A second call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
gunzip -kf .sbs/webgguf.gz && chmod +x .sbs/webgguf
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra3.sh' .sbs/pipeline.sh
cp "$H"/extra3.sh .sbs/
exec bash .sbs/device.sh "${1:-540}"
