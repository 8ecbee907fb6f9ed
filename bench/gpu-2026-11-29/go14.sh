#!/usr/bin/env bash
# The whole side-by-side matrix on the lent H200 with main's CLI, and, while
# llama.cpp builds and quantizes (the GPU is idle then), next14.sh with
# wip/chunks' CLI (split.wgsl's splits of several chunks,
# DeepShape::chunks; its default of 1 chunk is main's kernel), in one held
# machine. From the repository root, carry ['.sbs']: the kit
# (../shared/tools/gpu-side-by-side/prepare.sh) with main's stripped CLI
# gzipped as .sbs/webgguf.gz, wip/chunks' as .sbs/webgguf-wip.gz, and
# wip/chunks' stripped test binary, gzipped, as .sbs/tests-lib.gz; then
#   SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16' bash bench/gpu-2026-11-29/go14.sh SECONDS
# Before the kit starts, both CLIs run a short synthetic bench with their
# errors shown (2026-11-28c's run on an H200 got rc=1 from every bench of
# its CLI and kept no reason). The kit's benches wait for next14.sh;
# extra14.sh runs after them. A second call on the same warm machine only
# polls.
set -u
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
gunzip -f .sbs/webgguf.gz .sbs/webgguf-wip.gz; chmod +x .sbs/webgguf .sbs/webgguf-wip
for f in .sbs/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $ICD ] && export VK_DRIVER_FILES=$ICD || echo "no $ICD: $(ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1 | tr '\n' ' ')"
for b in webgguf webgguf-wip; do
  echo "== diag $b"
  timeout 60 .sbs/$b bench --backend gpu --synthetic llama-3.2-1b:Q4_K -p 64 -n 16 -r 1 --json 2>&1 | tail -4 | cut -c1-400
  echo "rc=${PIPESTATUS[0]}"
done
chmod u+w .sbs/pipeline.sh
cp "$H"/next14.sh "$H"/extra14.sh .sbs/
sed -i '/^wait$/a (bash $W/next14.sh > $R/next.log 2>&1; touch $R/next.done) \&' .sbs/pipeline.sh
sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next14.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra14.sh' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
