#!/usr/bin/env bash
# The whole side-by-side matrix with main 7817c59 (the per-format matvec
# shapes of 7ff1358 included), and, while llama.cpp builds and quantizes
# (the GPU is idle then), next12.sh, in one held machine. From the
# repository root, carry ['.sbs']: the kit
# (../shared/tools/gpu-side-by-side/prepare.sh) with main's stripped CLI as
# .sbs/webgguf and main's stripped test binary, gzipped, as
# .sbs/tests-lib.gz; then
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/gpu-2026-11-28b/go12.sh SECONDS
# The kit's benches wait for next12.sh; extra12.sh runs after them. A
# second call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
rm -rf /tmp/*.gguf /tmp/st /tmp/lbst   # earlier calls' files on this warm machine
chmod u+w .sbs/pipeline.sh
cp "$H"/next12.sh "$H"/extra12.sh .sbs/
sed -i '/^wait$/a (bash $W/next12.sh > $R/next.log 2>&1; touch $R/next.done) \&' .sbs/pipeline.sh
sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next12.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra12.sh' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
