#!/usr/bin/env bash
# 2026-11-30b, third call, carry ['.sbs']: where few.wgsl's ~10 us a
# layer goes (2026-11-30's bound: decode attention dropped, +9.5-19%),
# against the keys it attends: gpu-profile's per-kernel times (each
# dispatch timed in a pass of its own) at positions 1, 16, 32 and 63 on
# the synthetic 8B IQ4_XS and 1B Q4_K, and at 32 with the chunked kernel
# instead (WEBGGUF_GPU_FEW=0).
#   bash bench/gpu-2026-11-30b/fewprof.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
S=$(date +%s)
for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K; do
  for d in 1 16 32 63; do
    timeout 100 .sbs/webgguf gpu-profile --synthetic $m -n 8 -d $d > $OUT/prof-$m-d$d.json 2> /dev/null
    python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
k=d['kernels_decode_at_depth']
print(sys.argv[2], sys.argv[3], ' '.join('%s=%.1f/%d' % (x['kernel'], x['us'], x['count']) for x in k['by_kernel']))
" $OUT/prof-$m-d$d.json $m $d | tee -a $OUT/fewprof.txt
  done
  WEBGGUF_GPU_FEW=0 timeout 100 .sbs/webgguf gpu-profile --synthetic $m -n 8 -d 32 > $OUT/prof-$m-d32-chunked.json 2> /dev/null
  python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
k=d['kernels_decode_at_depth']
print(sys.argv[2], 'chunked32', ' '.join('%s=%.1f/%d' % (x['kernel'], x['us'], x['count']) for x in k['by_kernel']))
" $OUT/prof-$m-d32-chunked.json $m | tee -a $OUT/fewprof.txt
done
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/fewprof.txt
