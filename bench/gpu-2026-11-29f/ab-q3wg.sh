#!/usr/bin/env bash
# 2026-11-29f, one short device call (no llama.cpp), carry ['.sbs'] with
# the change's stripped CLI as .sbs/webgguf.gz (Q3_K products take 64
# threads where 128 would not each take a whole number, at least two, of
# wide units) and main 23748aa's as .sbs/webgguf-base.gz: synthetic files,
# tg64 medians, two rounds with the pair swapped.
#   bash bench/gpu-2026-11-29f/ab-q3wg.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf webgguf-base
for rd in 1 2; do
  for m in llama-3.1-8b:Q3_K llama-3.2-1b:Q3_K; do
    bs="webgguf webgguf-base"; [ $rd = 2 ] && bs="webgguf-base webgguf"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b $m)" | tee -a $OUT/ab-q3wg.txt
    done
  done
done
