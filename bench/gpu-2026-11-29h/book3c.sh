#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with
# 796f06d's CLI as .sbs/webgguf.gz and tools/pipeline-stats: after
# book3b.sh (triples need 102 registers in 8x32, 81 in 4x16, and gain only
# in 4x16: +0.5% over the pairs' 8x32), triples in the 128-thread shapes
# 8x16 and 4x8 (more workgroups an SM at the same registers) and 4x16
# again, against the pairs' default 8x32, registers first, then tg64, two
# rounds in opposite orders.
#   bash bench/gpu-2026-11-29h/book3c.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf pipeline-stats
m=llama-3.1-8b:IQ4_XS
for v in 8x16:1 4x8:1 8x16:0; do
  sh=${v%:*}; o=${v#*:}
  d=/tmp/sh-$sh-$o; mkdir -p $d
  WEBGGUF_GPU_GLU_Q_SHAPE=$sh WEBGGUF_GPU_BOOK3=$o timeout 90 .sbs/webgguf gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
  echo "== $m shape=$sh book3=$o"
  .sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -iE "register|shared" | cut -f4- | head -4
done 2>&1 | tee $OUT/regs.txt
R=$OUT/shapes.txt
for rd in 1 2; do
  vs="8x32:0 8x16:1 4x8:1 4x16:1 8x16:0"; [ $rd = 2 ] && vs="8x16:0 4x16:1 4x8:1 8x16:1 8x32:0"
  for v in $vs; do
    sh=${v%:*}; o=${v#*:}
    echo "$rd $m shape=$sh book3=$o $(TG_TIMEOUT=60 WEBGGUF_GPU_GLU_Q_SHAPE=$sh WEBGGUF_GPU_BOOK3=$o sbs_tg .sbs/webgguf $m)" | tee -a $R
  done
done
echo done | tee -a $R
