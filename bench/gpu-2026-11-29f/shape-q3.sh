#!/usr/bin/env bash
# 2026-11-29f, one short device call (no llama.cpp), carry ['.sbs'] with
# main 23748aa's stripped CLI as .sbs/webgguf.gz: matvec shapes for the
# padded Q3_K decoders (the per-format shapes were measured on the
# unpadded ones, 2026-11-28): rows a workgroup (WEBGGUF_GPU_MV_ROWS=Q,G,M
# for q/k/v, gate/up, plain; 0 = default) and threads (WEBGGUF_GPU_MV_WG,
# every product), synthetic 8B and 1B Q3_K, tg64 medians, two rounds in
# opposite orders.
#   bash bench/gpu-2026-11-29f/shape-q3.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
V="r0,0,0 r2,0,0 r8,0,0 r0,4,0 r0,0,1 r0,0,4 w64 w128 w256"
for rd in 1 2; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:Q3_K llama-3.2-1b:Q3_K; do
    for c in $vs; do
      case $c in
        r*) v=$(WEBGGUF_GPU_MV_ROWS=${c#r} TG_TIMEOUT=60 sbs_tg .sbs/webgguf $m) ;;
        w*) v=$(WEBGGUF_GPU_MV_WG=${c#w} TG_TIMEOUT=60 sbs_tg .sbs/webgguf $m) ;;
      esac
      echo "$rd $m $c $v" | tee -a $OUT/shape-q3.txt
    done
  done
done
