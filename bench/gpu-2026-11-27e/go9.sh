#!/usr/bin/env bash
# The whole side-by-side matrix (2026-11-27e: main 51506dd's paths, with the
# two prefill changes of 2026-11-27d) and an A/B of the two features of
# next2 (flash_coop.wgsl and mid.wgsl's splits at depth, both off by
# default), in one held machine. From the repository root, carry ['.sbs']:
# the kit (../shared/tools/gpu-side-by-side/prepare.sh) with next2's
# stripped CLI as .sbs/webgguf and its stripped test binary, gzipped, as
# .sbs/tests-lib.gz; then
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/gpu-2026-11-27e/go9.sh SECONDS
# next.sh runs on the GPU while llama.cpp builds and quantizes (the GPU is
# idle then; the CPUs are busy, so next.sh's bench figures are A/B only,
# interleaved, never compared with the kit's); the kit's benches wait for
# it. extra9.sh runs after the kit's benches. A second call on the same
# warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
cp "$H"/next.sh "$H"/extra9.sh .sbs/
sed -i '/^wait$/a (bash $W/next.sh > $R/next.log 2>&1; touch $R/next.done) \&' .sbs/pipeline.sh
sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra9.sh' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
