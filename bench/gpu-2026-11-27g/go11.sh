#!/usr/bin/env bash
# The whole side-by-side matrix (2026-11-27g: main 3e31d14, with gate/up's
# 2 rows and the kernels compiled without naga's loop counters) and, while
# llama.cpp builds and quantizes (the GPU is idle then), next11.sh, in one
# held machine. From the repository root, carry ['.sbs']: the kit
# (../shared/tools/gpu-side-by-side/prepare.sh) with main's stripped CLI as
# .sbs/webgguf and main's stripped test binary, gzipped, as
# .sbs/tests-lib.gz; then
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/gpu-2026-11-27g/go11.sh SECONDS
# The kit's benches wait for next11.sh; extra11.sh runs after them. A
# second call on the same warm machine only polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
rm -rf /tmp/*.gguf /tmp/st /tmp/lbst   # earlier calls' files on this warm machine
chmod u+w .sbs/pipeline.sh
cp "$H"/next11.sh "$H"/extra11.sh .sbs/
sed -i '/^wait$/a (bash $W/next11.sh > $R/next.log 2>&1; touch $R/next.done) \&' .sbs/pipeline.sh
sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next11.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra11.sh' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
