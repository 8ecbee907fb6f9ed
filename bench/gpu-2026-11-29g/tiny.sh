#!/usr/bin/env bash
# 2026-11-29g, one short device call (no llama.cpp), carry ['.sbs'] with
# main's CLI as .sbs/webgguf.gz: glu_q (and so own x, at TinyLlama's 2,048
# columns) on TinyLlama's 5,632-wide FFN (WEBGGUF_GPU_GLU_Q_MIN=0) against
# the default (glu_q from 8,192 outputs: both quantize passes), synthetic
# files, tg64 medians, two rounds in opposite orders.
#   bash bench/gpu-2026-11-29g/tiny.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
R=$OUT/tiny.txt
for rd in 1 2; do
  for m in tinyllama-1.1b:Q4_0 tinyllama-1.1b:Q4_K tinyllama-1.1b:IQ4_XS; do
    ks="8192 0"; [ $rd = 2 ] && ks="0 8192"
    for k in $ks; do
      echo "$rd $m glu_q_min=$k $(TG_TIMEOUT=60 WEBGGUF_GPU_GLU_Q_MIN=$k sbs_tg .sbs/webgguf $m)" | tee -a $R
    done
  done
done
echo done | tee -a $R
