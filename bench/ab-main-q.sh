#!/usr/bin/env bash
# One device call (~6 minutes), no llama.cpp: matvec.wgsl's main_q (the Wo
# product writes the fused gate/up product's int8 x and the parts of its
# norm's sum of squares, one quantize pass fewer a layer;
# WEBGGUF_GPU_MAIN_Q) with glu_q, against glu_q alone and neither, and
# main_q's team shapes (WEBGGUF_GPU_MAIN_Q_SHAPE=RxT), on synthetic files
# (every matrix in one type: no ratio to llama.cpp here), decode tg64
# medians after one prompt token, two interleaved rounds; then
# gpu-profile of the first model three ways. Here, before the call: the
# stripped CLI gzipped as .sbs/webgguf-mq.gz; then, carry ['.sbs']:
#   bash bench/ab-main-q.sh
# Results in $OUT (ab.txt, the profiles), the summary on stdout.
# MODELS and VARIANTS (name=ENV,ENV...; `-` for none) change the defaults.
set -u
MODELS=${MODELS:-llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K}
VARIANTS=${VARIANTS:-none=WEBGGUF_GPU_GLU_Q=0,WEBGGUF_GPU_MAIN_Q=0 glu=WEBGGUF_GPU_MAIN_Q=0 both=- m8x64=WEBGGUF_GPU_MAIN_Q_SHAPE=8x64 m2x16=WEBGGUF_GPU_MAIN_Q_SHAPE=2x16 m1x8=WEBGGUF_GPU_MAIN_Q_SHAPE=1x8}
. bench/sbs-common.sh
sbs_unpack webgguf-mq
sbs_vulkan
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
envs() { [ "${1#*=}" = - ] || echo "${1#*=}" | tr ',' ' '; }
run() { # ROUND MODEL VARIANT
  local v=$(env $(envs $3) timeout 120 .sbs/webgguf-mq bench --backend gpu --synthetic $2 -p 1 -n 64 -r 3 --json 2>>$OUT/err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$1 $2 ${3%%=*} ${v:-fail}" | tee -a $OUT/ab.txt
}
for rd in 1 2; do
  for m in $MODELS; do
    vs=$VARIANTS; [ $rd = 2 ] && vs=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for x in $vs; do run $rd $m $x; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
m=${MODELS%% *}
for x in $(echo $VARIANTS | cut -d' ' -f1-3); do
  env $(envs $x) timeout 100 .sbs/webgguf-mq gpu-profile --synthetic $m -n 8 > $OUT/prof-${m/:/-}-${x%%=*}.json 2>>$OUT/err.log
done
echo "profiles after $(( $(date +%s) - S )) s"
python3 - $OUT/ab.txt <<'PY'
import sys, collections
v = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    rd, m, s, x = l.split()
    if x != 'fail':
        v[m].setdefault(s, []).append(float(x))
for m, d in v.items():
    base = max(d.get('none', [0]))
    print(m, '  '.join('%s %s (%.3f)' % (s, xs, max(xs) / base if base else 0) for s, xs in d.items()))
PY
