#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with a
# timing-only CLI as .sbs/webgguf.gz (wrong values: wide.wgsl's Q2_K
# decoder reads one word of quants a 16-element group instead of four
# words shared with three other wide units, and Q3_K's one 16-byte word a
# unit for its quants, high bits and scales, plus d, instead of five: the
# loads a planar per-unit layout would need) and main 00a50ea's CLI as
# .sbs/old.gz: tg64 of the synthetic 8B and 1B Q2_K and Q3_K both ways,
# two rounds in opposite orders, and gpu-profile of the 8B both ways:
# what such a layout could gain at most.
#   bash bench/gpu-2026-11-29h/planar.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
R=$OUT/planar.txt
for rd in 1 2; do
  for m in llama-3.1-8b:Q2_K llama-3.1-8b:Q3_K llama-3.2-1b:Q2_K llama-3.2-1b:Q3_K; do
    bs="old webgguf"; [ $rd = 2 ] && bs="webgguf old"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b $m)" | tee -a $R
    done
  done
done
for t in Q2_K Q3_K; do
  for b in old webgguf; do
    timeout 90 .sbs/$b gpu-profile --synthetic llama-3.1-8b:$t -n 16 > $OUT/prof-$t-$b.json 2>&1
  done
done
echo done | tee -a $R
