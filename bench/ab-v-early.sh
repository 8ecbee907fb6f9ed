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
# MODELS, DEPTHS, TYPE and TESTS=0 change the defaults (a dry run on
# lavapipe: MODELS=smollm2-135m TYPE=Q8_0 DEPTHS=1100 TESTS=0).
set -u
MODELS=${MODELS:-llama-3.1-8b llama-3.2-1b}; DEPTHS=${DEPTHS:-2048 4096 8192}; TYPE=${TYPE:-Q4_K}
. bench/sbs-common.sh
sbs_unpack webgguf tests-lib
sbs_vulkan
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ "${TESTS:-1}" = 0 ] || sbs_tests $OUT/tests.log
S=$(date +%s)
run() { # ROUND MODEL DEPTH V_EARLY
  local v=$(WEBGGUF_GPU_DEEP_V_EARLY=$4 timeout 120 .sbs/webgguf bench --backend gpu --synthetic $2:$TYPE -p 1 -n 64 -r 3 -d $3 --ctx $(($3 + 256)) --json 2>>$OUT/err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$1 $2 $3 v_early=$4 ${v:-fail}" | tee -a $OUT/ab.txt
}
for rd in 1 2 3; do
  for m in $MODELS; do for d in $DEPTHS; do
    if [ $((rd % 2)) = 1 ]; then run $rd $m $d 0; run $rd $m $d 1; else run $rd $m $d 1; run $rd $m $d 0; fi
  done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
m=${MODELS%% *}; d=${DEPTHS##* }
for e in 0 1; do
  WEBGGUF_GPU_DEEP_V_EARLY=$e timeout 100 .sbs/webgguf gpu-profile --synthetic $m:$TYPE -n 4 -d $d > $OUT/prof-d$d-$m-v$e.json 2>>$OUT/err.log
done
echo "profiles after $(( $(date +%s) - S )) s"
python3 - $OUT/ab.txt <<'PY'
import sys, collections
v = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    rd, m, d, e, x = l.split()
    if x != 'fail':
        v[(m, int(d), e)][rd] = float(x)
for (m, d) in sorted({(m, d) for m, d, _ in v}):
    a, b = v[(m, d, 'v_early=0')], v[(m, d, 'v_early=1')]
    r = [round(b[k] / a[k], 3) for k in sorted(a) if k in b]
    print(m, d, 'base', sorted(a.values()), 'v_early', sorted(b.values()), 'ratios by round', r)
PY
