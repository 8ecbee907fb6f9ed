#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with a
# wip/book3 CLI as .sbs/webgguf.gz (796f06d plus timing-only variants by
# WEBGGUF_TRIV: `seq` the 12 lookups as one chain of dot4I8Packed adds,
# `udot` x regrouped per row call instead of once a unit, `junk` the
# table filled with junk, no decoding: wrong values, for the fill's cost):
# the driver's registers for each in glu_q's 8x32 and 4x16 shapes, then
# tg64 of each against pairs, two rounds in opposite orders.
#   bash bench/gpu-2026-11-29h/book3d.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf pipeline-stats
m=llama-3.1-8b:IQ4_XS
for sh in 8x32 4x16; do
  for v in def seq udot junk; do
    d=/tmp/sh-$sh-$v; mkdir -p $d
    WEBGGUF_TRIV=$v WEBGGUF_GPU_GLU_Q_SHAPE=$sh timeout 90 .sbs/webgguf gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
    echo "== $m shape=$sh triv=$v $(.sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -iE "register" | cut -f4- | head -1)"
  done
done 2>&1 | tee $OUT/regs.txt
R=$OUT/tg.txt
for rd in 1 2; do
  vs="8x32:pairs 8x32:def 8x32:seq 8x32:udot 8x32:junk 4x16:seq 4x16:udot"
  [ $rd = 2 ] && vs="4x16:udot 4x16:seq 8x32:junk 8x32:udot 8x32:seq 8x32:def 8x32:pairs"
  for x in $vs; do
    sh=${x%:*}; v=${x#*:}; o=1; [ $v = pairs ] && o=0
    echo "$rd $m shape=$sh triv=$v $(TG_TIMEOUT=60 WEBGGUF_TRIV=$v WEBGGUF_GPU_BOOK3=$o WEBGGUF_GPU_GLU_Q_SHAPE=$sh sbs_tg .sbs/webgguf $m)" | tee -a $R
  done
done
echo done | tee -a $R
