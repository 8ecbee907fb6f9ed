#!/usr/bin/env bash
# 2026-12-02, third machine (carry ['.sbs']): rows per workgroup of the
# plain products (Wo, down; WEBGGUF_GPU_MV_ROWS=0,0,R) on synthetic 8B
# files with main (.sbs/base.gz, 89b4bef). 2026-11-29d's main_q in 8-row
# teams gained 1.2% on the 8B IQ4_XS only; 2026-12-02's profile has
# IQ4_XS's Wo 2.2 us a layer slower than Q4_K's. First gpu-profile of
# each R on IQ4_XS (Wo and down apart), then tg64 of R = 2 (the default),
# 4 and 8 on IQ4_XS and Q4_K, two rounds in opposite orders.
#   bash bench/gpu-2026-12-02/rows.sh
set -u
. bench/sbs-common.sh
sbs_short base
S=$(date +%s)
for R in 2 1 4 8; do
  WEBGGUF_GPU_MV_ROWS=0,0,$R timeout 60 .sbs/base gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 > $OUT/prof-r$R.json 2> /dev/null
  python3 -c "
import json,sys; d=json.load(open('$OUT/prof-r$R.json'))
print('R=$R', ', '.join('%s %.0f' % (x['kernel'], x['us']) for x in d['kernels_decode']['by_kernel']))" | tee -a $OUT/rows.txt
done
for rd in 1 2; do
  order="2 4 8"; [ $rd = 2 ] && order="8 4 2"
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K; do
    for R in $order; do
      echo "$rd $m R=$R $(export WEBGGUF_GPU_MV_ROWS=0,0,$R; sbs_tg .sbs/base $m)" | tee -a $OUT/rows.txt
    done
  done
done
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/rows.txt
