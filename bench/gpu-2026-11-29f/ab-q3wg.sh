#!/usr/bin/env bash
# 2026-11-29f, one short device call (no llama.cpp), carry ['.sbs'] with
# the change's stripped CLI as .sbs/webgguf.gz (Q3_K products take 64
# threads where 128 would not each take a whole number, at least two, of
# wide units) and main 23748aa's as .sbs/webgguf-base.gz: synthetic files,
# tg64 medians, two rounds with the pair swapped.
#   bash bench/gpu-2026-11-29f/ab-q3wg.sh
set -u
. bench/sbs-common.sh
sbs_unpack webgguf webgguf-base
sbs_vulkan
OUT=${OUT:-/tmp}
timeout 60 .sbs/webgguf bench --backend gpu --synthetic llama-3.2-1b:Q4_K -p 16 -n 16 -r 1 > /dev/null 2>&1  # warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q3_K llama-3.2-1b:Q3_K; do
    bs="webgguf webgguf-base"; [ $rd = 2 ] && bs="webgguf-base webgguf"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b $m)" | tee -a $OUT/ab-q3wg.txt
    done
  done
done
