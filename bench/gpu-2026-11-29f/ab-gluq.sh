#!/usr/bin/env bash
# 2026-11-29f, one short device call (no llama.cpp), carry ['.sbs'] with
# main's stripped CLI as .sbs/webgguf.gz: glu_q (the fused gate/up product
# writing the down product's int8 x) against the quantize pass
# (WEBGGUF_GPU_GLU_Q=0) on the integer formats 2026-11-29d and 29e did
# not A/B (they measured IQ4_XS, Q4_K, Q4_0 and Q8_0), synthetic 8B files
# (every matrix in the type), tg64 medians (sbs_tg), two rounds, the
# order of the pair swapped in the second; Q4_K beside as the reference.
# Then gpu-profile's gate/up time of Q3_K and Q2_K both ways.
#   bash bench/gpu-2026-11-29f/ab-gluq.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
for rd in 1 2; do
  for t in Q3_K Q2_K Q5_K Q6_K Q4_1 Q5_0 Q5_1 IQ4_NL Q4_K; do
    gs="1 0"; [ $rd = 2 ] && gs="0 1"
    for g in $gs; do
      v=$(WEBGGUF_GPU_GLU_Q=$g TG_TIMEOUT=60 sbs_tg .sbs/webgguf llama-3.1-8b:$t)
      echo "$rd llama-3.1-8b:$t glu_q=$g $v" | tee -a $OUT/gluq.txt
    done
  done
done
for t in Q3_K Q2_K; do
  for g in 1 0; do
    WEBGGUF_GPU_GLU_Q=$g timeout 120 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
    python3 - $t $g <<'PY' | tee -a $OUT/gluq.txt
import json, sys
t, g = sys.argv[1:3]
d = json.load(open('/tmp/p.json'))
k = {x['kernel']: round(x['us']) for x in d['kernels_decode']['by_kernel']}
print('profile', t, 'glu_q=%s' % g, ' '.join('%s=%s' % kv for kv in sorted(k.items())))
PY
  done
done
