#!/usr/bin/env bash
# 2026-11-29g, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI of main e039fd3 plus regs/ownx-variants.patch as .sbs/webgguf-v.gz (main's own x, with
# WEBGGUF_OWNX_V picking own_x.wgsl's variant: 0 main's, 1 lean (one vec4
# at a time in the quantizing loops), 3 none (no prologue: wrong values,
# timing and registers only)) and tools/pipeline-stats: glu_q's registers
# for each, and tg64 with its own x at any width (WEBGGUF_GPU_OWN_X=65536)
# against the pass (0), synthetic files, two rounds.
# Its register lines came out empty (it cut the name field; fixed here
# since): regs3.sh has them.
#   bash bench/gpu-2026-11-29g/regs2.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf-v pipeline-stats
R=$OUT/regs2.txt
for v in 0 1 3; do
  d=/tmp/sh-$v; mkdir -p $d
  WEBGGUF_OWNX_V=$v WEBGGUF_GPU_OWN_X=65536 timeout 90 .sbs/webgguf-v gpu-profile --synthetic llama-3.1-8b:Q4_K -n 2 --shaders $d > /dev/null 2>&1
  echo "regs v=$v $(.sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -E 'Register Count' | cut -f6 | tr '\n' ' ')" | tee -a $R
done
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K; do
    vs="p 1 3 0"; [ $rd = 2 ] && vs="0 3 1 p"
    for v in $vs; do
      if [ $v = p ]; then o=0; vv=0; else o=65536; vv=$v; fi
      echo "$rd $m v=$v $(TG_TIMEOUT=60 WEBGGUF_OWNX_V=$vv WEBGGUF_GPU_OWN_X=$o sbs_tg .sbs/webgguf-v $m)" | tee -a $R
    done
  done
done
echo done | tee -a $R
