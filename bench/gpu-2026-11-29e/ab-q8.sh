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
      v=$(WEBGGUF_GPU_GLU_Q=$g timeout 60 .sbs/webgguf bench --backend gpu --synthetic $m -p 1 -n 64 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
      echo "$rd $m glu_q=$g ${v:-fail}" | tee -a $OUT/ab.txt
    done
  done
done
