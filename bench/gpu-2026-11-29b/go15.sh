#!/usr/bin/env bash
# The whole side-by-side matrix on a lent H200 with main's CLI (b364667:
# the merge in parts of 32 dimensions), and, while llama.cpp builds and
# quantizes (the GPU is idle then), next15.sh: every gpu:: test of that
# build and the depth A/B; after the kit's benches, extra15.sh. From the
# repository root, carry ['.sbs']: the kit
# (../shared/tools/gpu-side-by-side/prepare.sh) with main's stripped CLI
# gzipped as .sbs/webgguf.gz, 39c3667's (before split.wgsl's chunks, the
# far tier and the merge's parts) as .sbs/webgguf-old.gz, and main's
# stripped test binary as .sbs/tests-lib.gz; then
#   bash bench/gpu-2026-11-29b/go15.sh SECONDS
# The matrix is set here, not by the caller, so a polling call that lands
# on a fresh machine restarts the same run (2026-11-29's lesson). A second
# call on the same warm machine only polls.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "${1:-540}"; fi
gunzip -f .sbs/webgguf.gz .sbs/webgguf-old.gz; chmod +x .sbs/webgguf .sbs/webgguf-old
for f in .sbs/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f $ICD ] && export VK_DRIVER_FILES=$ICD || echo "no $ICD: $(ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1 | tr '\n' ' ')"
for b in webgguf webgguf-old; do
  echo "== diag $b"
  timeout 60 .sbs/$b bench --backend gpu --synthetic llama-3.2-1b:Q4_K -p 64 -n 16 -r 1 --json 2>&1 | tail -2 | cut -c1-300
  echo "rc=${PIPESTATUS[0]}"
done
chmod u+w .sbs/pipeline.sh
cp "$H"/next15.sh "$H"/extra15.sh .sbs/
sed -i '/^wait$/a (bash $W/next15.sh > $R/next.log 2>&1; touch $R/next.done) \&' .sbs/pipeline.sh
sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next15.sh done"' .sbs/pipeline.sh
sed -i '/^nvidia-smi -q -d CLOCK/i . $W/extra15.sh' .sbs/pipeline.sh
exec bash .sbs/device.sh "${1:-540}"
