#!/usr/bin/env bash
# One short device call (~3.5 minutes, no llama.cpp; carry ['.sbs'] with
# the prefetch branch's stripped CLI as .sbs/webgguf-pf.gz and main's as
# .sbs/webgguf.gz): the
# code-book kernels' two experiments, synthetic IQ4_XS files (every
# matrix IQ4_XS), tg64 medians, rounds in opposite orders:
#   pP: WEBGGUF_GPU_PREFETCH=P (1: the code-book rows' words and x
#       loaded one loop iteration ahead);
#   wN: WEBGGUF_GPU_BOOK_WGS=N (at most N workgroups a product, each
#       summing several row groups and filling the code book once; 0:
#       one workgroup a row group). The H200 has 132 SMs.
# Then main's binary against the branch's defaults on a format the
# experiments do not touch (8B Q4_K): the branch's matvec entries loop
# over their row groups (once, uncapped), which must cost nothing.
#   bash bench/gpu-2026-11-29e/ab-prefetch.sh
set -u
. bench/sbs-common.sh
sbs_unpack webgguf-pf webgguf
sbs_vulkan
V="p0w0 p1w0 p0w264 p1w264 p0w1056 p1w1056"
for rd in 1 2; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS; do
    [ $rd = 2 ] && [ $m = llama-3.2-1b:IQ4_XS ] && continue
    for c in $vs; do
      p=${c#p}; p=${p%%w*}; w=${c#*w}
      v=$(WEBGGUF_GPU_PREFETCH=$p WEBGGUF_GPU_BOOK_WGS=$w TG_TIMEOUT=40 sbs_tg .sbs/webgguf-pf $m)
      echo "$rd $m $c $v" | tee -a $OUT/ab.txt
    done
  done
done
for rd in 1 2; do
  for b in webgguf webgguf-pf; do
    [ $rd = 2 ] && b=$([ $b = webgguf ] && echo webgguf-pf || echo webgguf)
    v=$(TG_TIMEOUT=40 sbs_tg .sbs/$b llama-3.1-8b:Q4_K)
    echo "$rd llama-3.1-8b:Q4_K $b $v" | tee -a $OUT/ab.txt
  done
done
