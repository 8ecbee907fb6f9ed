#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI whose wide.wgsl fills the pair code book with one iq4_bytes per
# two entries (.sbs/webgguf.gz) and main 00a50ea's, two per entry
# (.sbs/old.gz): tg64 of the synthetic 8B IQ4_XS and IQ4_NL and the 1B
# IQ4_XS both ways, two rounds in opposite orders; the new fill with 8
# rows a q/k/v workgroup (WEBGGUF_GPU_MV_ROWS=8,0,0) and 4 a plain one
# (0,0,4) on the 8B IQ4_XS; gpu-profile of the 8B IQ4_XS both ways.
#   bash bench/gpu-2026-11-29h/fill.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
R=$OUT/fill.txt
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL llama-3.2-1b:IQ4_XS; do
    bs="old webgguf"; [ $rd = 2 ] && bs="webgguf old"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b $m)" | tee -a $R
    done
  done
  m=llama-3.1-8b:IQ4_XS
  for r in 8,0,0 0,0,4; do
    echo "$rd $m webgguf rows=$r $(TG_TIMEOUT=60 WEBGGUF_GPU_MV_ROWS=$r sbs_tg .sbs/webgguf $m)" | tee -a $R
  done
done
for b in old webgguf; do
  timeout 90 .sbs/$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 > $OUT/prof-IQ4_XS-$b.json 2>&1
done
echo done | tee -a $R
