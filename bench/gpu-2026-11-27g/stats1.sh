#!/usr/bin/env bash
# 2026-11-27g, first device call: what the NVIDIA driver says of our
# pipelines (registers a thread, spills, workgroup memory), through
# tools/pipeline-stats (VK_KHR_pipeline_executable_properties), for the
# WGSL that `gpu-profile --shaders` records on synthetic 8B files (every
# matrix in one type): Q4_K with decode at depth 8192 (split.wgsl and the
# merge), then one file per matvec family. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
mkdir -p $OUT/sh
timeout 200 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 --shaders $OUT/sh/q4k > $OUT/prof-q4k-d8192.json 2> $OUT/prof-q4k.err
tail -2 $OUT/prof-q4k.err
echo "q4k after $(( $(date +%s) - S )) s"
.dev/pstats $OUT/sh/q4k > $OUT/stats-q4k.tsv 2> $OUT/stats-q4k.err
cat $OUT/stats-q4k.err; wc -l $OUT/stats-q4k.tsv
# The statistics' names, once, then registers and spills a pipeline.
cut -f5 $OUT/stats-q4k.tsv | sort | uniq -c | head -40
grep -i -E "regist|spill|local|shared|occup|thread" $OUT/stats-q4k.tsv | cut -f2,3,5,6 | head -120
for t in Q2_K Q3_K Q5_K Q6_K IQ4_XS Q4_0 Q8_0 F16; do
  timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:$t -n 4 --shaders $OUT/sh/$t > $OUT/prof-$t.json 2> /dev/null
  .dev/pstats $OUT/sh/$t > $OUT/stats-$t.tsv 2>&1
  echo "== $t after $(( $(date +%s) - S )) s"
  grep -i -E "regist|spill|local" $OUT/stats-$t.tsv | cut -f2,3,5,6 | head -40
done
