#!/usr/bin/env bash
# One device call (~7 minutes), no llama.cpp: split.wgsl's V loads right
# after the K dots (DeepShape::v_early, WEBGGUF_GPU_DEEP_V_EARLY=1) against
# after the softmax (the default), on synthetic Q4_K files (every matrix
# Q4_K: no ratio to llama.cpp here), decode tg64 medians after d keys,
# three interleaved rounds; then gpu-profile at 8192 keys (the split
# kernel timed alone, both ways); first, every gpu:: test of the build.
# Here, before the call: main's stripped CLI gzipped as .sbs/webgguf.gz
# and its stripped test binary as .sbs/tests-lib.gz; then, carry ['.sbs']:
#   bash bench/ab-v-early.sh
# Results in $OUT (ab.txt, the profiles, tests.log), the summary on stdout.
set -u
. bench/sbs-common.sh
sbs_unpack webgguf tests-lib
sbs_vulkan
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.sbs/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300 | tee $OUT/tests.log
echo "tests after $(( $(date +%s) - S )) s"
run() { # ROUND MODEL DEPTH V_EARLY
  local v=$(WEBGGUF_GPU_DEEP_V_EARLY=$4 timeout 120 .sbs/webgguf bench --backend gpu --synthetic $2:Q4_K -p 1 -n 64 -r 3 -d $3 --ctx $(($3 + 256)) --json 2>>$OUT/err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$1 $2 $3 v_early=$4 ${v:-fail}" | tee -a $OUT/ab.txt
}
for rd in 1 2 3; do
  for m in llama-3.1-8b llama-3.2-1b; do for d in 2048 4096 8192; do
    if [ $((rd % 2)) = 1 ]; then run $rd $m $d 0; run $rd $m $d 1; else run $rd $m $d 1; run $rd $m $d 0; fi
  done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for e in 0 1; do
  WEBGGUF_GPU_DEEP_V_EARLY=$e timeout 100 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 > $OUT/prof-d8192-8b-v$e.json 2>>$OUT/err.log
done
echo "profiles after $(( $(date +%s) - S )) s"
python3 - $OUT/ab.txt <<'PY'
import sys, collections
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    rd, m, d, e, x = l.split()
    if x != 'fail':
        v[(m, int(d), e)].append(float(x))
for (m, d) in sorted({(m, d) for m, d, _ in v}):
    a, b = v[(m, d, 'v_early=0')], v[(m, d, 'v_early=1')]
    r = [y / x for x, y in zip(a, b)]
    print(m, d, 'base', a, 'v_early', b, 'ratios', [round(x, 3) for x in r])
PY
