#!/usr/bin/env bash
# One short device call (~3 minutes, no llama.cpp; carry ['.sbs'] with
# main's stripped CLI as .sbs/webgguf.gz): glu_q on and off on synthetic
# Q8_0 files (every matrix Q8_0, as llama-quantize's Q8_0 8B but its
# embeddings), tg64 medians, two rounds in opposite orders; go19's real-layout
# 8B Q8_0 read 271.7 with glu_q and 280.7 without.
#   bash bench/gpu-2026-11-29e/ab-q8.sh
set -u
. bench/sbs-common.sh
sbs_unpack webgguf
sbs_vulkan
for rd in 1 2; do
  for m in llama-3.1-8b:Q8_0 llama-3.2-1b:Q8_0; do
    for g in 1 0; do
      [ $rd = 2 ] && g=$((1 - g))
      v=$(WEBGGUF_GPU_GLU_Q=$g TG_TIMEOUT=60 sbs_tg .sbs/webgguf $m)
      echo "$rd $m glu_q=$g $v" | tee -a $OUT/ab.txt
    done
  done
done
