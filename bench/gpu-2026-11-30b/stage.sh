#!/usr/bin/env bash
# 2026-11-30b, fifth call, carry ['.sbs']: .sbs/webgguf.gz = few.wgsl
# with V staged in workgroup memory (CK keys at a time, the first stage
# beside the K loads), .sbs/ring.gz = the tree before it (the V ring of
# loads; round.sh's binary with the forms forcible), .sbs/tests-lib.gz =
# the staged tree's library tests. Every gpu:: test, tg64 both ways
# (positions 1-65: few.wgsl's range) two rounds in opposite orders, and
# the attention kernel timed alone at positions 16 and 63 both ways.
#   bash bench/gpu-2026-11-30b/stage.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf ring
sbs_unpack tests-lib
S=$(date +%s)
sbs_tests $OUT/tests.txt
sbs_ab $OUT/stage.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0" \
  ring:ring staged:webgguf
for b in ring webgguf; do
  for d in 16 63; do
    f=$OUT/p.json
    timeout 100 .sbs/$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 -d $d > $f 2> /dev/null
    python3 -c "
import json
d=json.load(open('$f'))
k=d['kernels_decode_at_depth']
a=[x for x in k['by_kernel'] if x['kernel']=='attention'][0]
print('$b', $d, 'attention %.2f us/layer' % (a['us']/a['count']))
" | tee -a $OUT/prof.txt
  done
done
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/stage.txt
