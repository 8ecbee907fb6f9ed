#!/usr/bin/env bash
# 2026-11-29g, the call after regs2.sh (same carry; own_x_none.wgsl now
# keeps X and G bound, so variant 3 builds): glu_q's registers for each
# variant, then tg64 of variant 3 (no prologue) against the pass and
# variant 1 on the synthetic 8B Q4_K, two rounds.
#   bash bench/gpu-2026-11-29g/regs3.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf-v pipeline-stats
R=$OUT/regs3.txt
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for v in p 0 1 3; do
    if [ $v = p ]; then o=0; vv=0; else o=65536; vv=$v; fi
    d=/tmp/sh-${m/:/-}-$v; mkdir -p $d
    WEBGGUF_OWNX_V=$vv WEBGGUF_GPU_OWN_X=$o timeout 90 .sbs/webgguf-v gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
    echo "regs $m v=$v $(.sbs/pipeline-stats --trusted-loops $d glu_q 2>&1 | grep -E 'Register Count|Shared Memory' | cut -f5,6 | tr '\t\n' '= ')" | tee -a $R
  done
done
for rd in 1 2; do
  for v in p 3 1; do
    if [ $v = p ]; then o=0; vv=0; else o=65536; vv=$v; fi
    echo "$rd llama-3.1-8b:Q4_K v=$v $(TG_TIMEOUT=60 WEBGGUF_OWNX_V=$vv WEBGGUF_GPU_OWN_X=$o sbs_tg .sbs/webgguf-v llama-3.1-8b:Q4_K)" | tee -a $R
  done
done
echo done | tee -a $R
