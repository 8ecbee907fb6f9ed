#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with
# 796f06d's CLI as .sbs/webgguf.gz and tools/pipeline-stats: after
# book3.sh (triples 4.5% slower on the synthetic 8B IQ4_XS), what the
# driver says of glu_q's registers with triples and pairs, in the default
# 8x32 shape and in 4x16 and 2x8 (fewer row sums a thread), and tg64 of
# those shapes both ways, two rounds in opposite orders.
#   bash bench/gpu-2026-11-29h/book3b.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf pipeline-stats
m=llama-3.1-8b:IQ4_XS
for sh in 8x32 4x16 2x8; do
  for o in 0 1; do
    d=/tmp/sh-$sh-$o; mkdir -p $d
    WEBGGUF_GPU_GLU_Q_SHAPE=$sh WEBGGUF_GPU_BOOK3=$o timeout 90 .sbs/webgguf gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
    echo "== $m shape=$sh book3=$o"
    .sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -iE "register|shared|spill" | cut -f4- | head -6
  done
done 2>&1 | tee $OUT/regs.txt
R=$OUT/shapes.txt
for rd in 1 2; do
  for sh in 8x32 4x16 2x8; do
    os="0 1"; [ $rd = 2 ] && os="1 0"
    for o in $os; do
      echo "$rd $m shape=$sh book3=$o $(TG_TIMEOUT=60 WEBGGUF_GPU_GLU_Q_SHAPE=$sh WEBGGUF_GPU_BOOK3=$o sbs_tg .sbs/webgguf $m)" | tee -a $R
    done
  done
done
echo done | tee -a $R
