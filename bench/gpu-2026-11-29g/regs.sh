#!/usr/bin/env bash
# 2026-11-29g, one short device call (no llama.cpp), carry ['.sbs'] with
# main's CLI as .sbs/webgguf.gz and tools/pipeline-stats as
# .sbs/pipeline-stats.gz: what the driver says of the glu_q gate/up kernel
# (registers a thread, workgroup memory) with its own x and with the
# quantize pass (WEBGGUF_GPU_OWN_X=65536 / 0), on the synthetic 8B (4,096
# columns, where own x lost) and 1B (2,048, where it gained).
#   bash bench/gpu-2026-11-29g/regs.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf pipeline-stats
for m in llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K; do
  for o in 0 65536; do
    d=/tmp/sh-${m/:/-}-$o; mkdir -p $d
    WEBGGUF_GPU_OWN_X=$o timeout 90 .sbs/webgguf gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
    echo "== $m own_x=$o"
    .sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -iE "register|shared|local|spill|workgroup" | cut -f2- | head -12
  done
done 2>&1 | tee $OUT/regs.txt
