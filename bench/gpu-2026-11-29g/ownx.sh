#!/usr/bin/env bash
# 2026-11-29g, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI as .sbs/webgguf.gz: glu_q quantizing its own x (own_x.wgsl: no
# quantize pass before gate/up) at any width against the pass, synthetic
# files, tg64 medians, two rounds in opposite orders; then gpu-profile of
# the 8B IQ4_XS and Q4_K both ways. It ran with an earlier build of this
# change, whose knob was WEBGGUF_GPU_OWN_X=1 / 0; main's is the widest row
# that takes it (default 2048), so "1" below passes 65536.
#   bash bench/gpu-2026-11-29g/ownx.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
R=$OUT/ownx.txt
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K llama-3.2-1b:IQ4_XS; do
    os="0 1"; [ $rd = 2 ] && os="1 0"
    for o in $os; do
      echo "$rd $m own_x=$o $(TG_TIMEOUT=60 WEBGGUF_GPU_OWN_X=$((o * 65536)) sbs_tg .sbs/webgguf $m)" | tee -a $R
    done
  done
done
for m in IQ4_XS Q4_K; do
  WEBGGUF_GPU_OWN_X=65536 timeout 90 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:$m -n 16 > $OUT/prof-$m-ownx.json 2>&1
  WEBGGUF_GPU_OWN_X=0 timeout 90 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:$m -n 16 > $OUT/prof-$m-pass.json 2>&1
done
echo done | tee -a $R
