#!/usr/bin/env bash
# 2026-11-30, one short device call, carry ['.sbs']: .sbs/webgguf.gz =
# wip/sq (sq2's binary), .sbs/old.gz = main's, .sbs/pipeline-stats.gz:
# where wip/sq's 8B Q4_K step loses 5% (sq2/sq.txt): gpu-profile of the
# synthetic 8B Q4_K and IQ4_XS both ways (each dispatch timed alone), and
# the driver's register counts of the products that read the norm's sums.
# Ran twice: prof/ (sq2's binary) and prof3/ (sq3's: the sums after the
# rows, only with a norm).
#   bash bench/gpu-2026-11-30/prof.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old pipeline-stats
for m in llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS; do
  for b in old webgguf; do
    d=/tmp/sh-$b-${m/:/-}; mkdir -p $d
    f=$OUT/prof-$b-${m/:/-}.json
    timeout 90 .sbs/$b gpu-profile --synthetic $m -n 8 --shaders $d > $f 2>/dev/null
    python3 -c "
import json
d=json.load(open('$f'))
print('$b $m', round(d['steps']['median_us']['gpu_pass']), ', '.join('%s %.0f'%(k['kernel'],k['us']) for k in d['kernels_decode']['by_kernel']))
" | tee -a $OUT/prof.txt
    for k in glu_q qkv head; do
      echo "== $b $m $k" >> $OUT/regs.txt
      timeout 60 .sbs/pipeline-stats --trusted-loops $d $k 2>&1 | grep -iE "^==|register|spill" | cut -f2- | head -16 >> $OUT/regs.txt
    done
  done
done
grep -c . $OUT/regs.txt; head -60 $OUT/regs.txt
