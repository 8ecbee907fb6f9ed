#!/usr/bin/env bash
# 2026-11-30b, fourth call, carry ['.sbs']: .sbs/bound.gz = the working
# tree plus fewbound.patch (WEBGGUF_BOUND_FEW=..., bench only, wrong
# values): few.wgsl with parts cut, each decode kernel timed alone by
# gpu-profile at positions 16 and 63 on the synthetic 8B IQ4_XS, to find
# where its ~12 us at no keys goes (fewprof/: 14.8 us + 0.11 us a key).
# Cuts: noreplay (no f16 replay), nodots (no K dots), noscan (no running
# max scan), nohq (main_q without the int8 row), all four, and empty
# (main_q returns at once, after reading S.pos). Then the register count
# of the few pipeline.
#   bash bench/gpu-2026-11-30b/fewbound.sh
set -u
. bench/sbs-common.sh
sbs_short bound pipeline-stats
S=$(date +%s)
m=llama-3.1-8b:IQ4_XS
for v in base noreplay nodots noscan nohq noreplay,nodots,noscan,nohq empty; do
  for d in 16 63; do
    f=$OUT/p.json
    WEBGGUF_BOUND_FEW=$v timeout 100 .sbs/bound gpu-profile --synthetic $m -n 8 -d $d > $f 2> /dev/null
    python3 -c "
import json,sys
d=json.load(open('$f'))
k=d['kernels_decode_at_depth']
a=[x for x in k['by_kernel'] if x['kernel']=='attention'][0]
print('$v', $d, 'attention %.2f us/layer' % (a['us']/a['count']))
" | tee -a $OUT/fewbound.txt
  done
done
d=/tmp/sh-few; mkdir -p $d
timeout 100 .sbs/bound gpu-profile --synthetic $m -n 2 --shaders $d > /dev/null 2>&1
cut -f1,2 $d/index.tsv | sort | uniq | tr '\n' ' ' | head -c 1500 >> $OUT/regs.txt; echo >> $OUT/regs.txt
for k in attention_few; do
  timeout 60 .sbs/pipeline-stats --trusted-loops $d $k 2>&1 | grep -iE "^==|register|spill|local|shared" | head -20 >> $OUT/regs.txt
done
cat $OUT/regs.txt
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/fewbound.txt
