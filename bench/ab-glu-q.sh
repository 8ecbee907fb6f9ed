#!/usr/bin/env bash
# One device call (~6 minutes), no llama.cpp: matvec.wgsl's glu_q (the
# gate/up product writes the down product's int8 x, one quantize pass
# fewer a layer; WEBGGUF_GPU_GLU_Q) against the quantize pass, and glu_q's
# team shapes (WEBGGUF_GPU_GLU_Q_SHAPE=RxT), on synthetic files (every
# matrix in one type: no ratio to llama.cpp here), decode tg64 medians
# after one prompt token, two interleaved rounds; then gpu-profile of the
# 8B IQ4_XS both ways. Here, before the call: the stripped CLI gzipped as
# .sbs/webgguf-gq.gz; then, carry ['.sbs']:
#   bash bench/ab-glu-q.sh
# Results in $OUT (ab.txt, the profiles), the summary on stdout.
# MODELS and SHAPES change the defaults; since glu_q_min (8192 outputs),
# export WEBGGUF_GPU_GLU_Q_MIN=0 to measure narrower FFNs (TinyLlama:
# MODELS=tinyllama-1.1b:Q4_0).
set -u
MODELS=${MODELS:-llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K}
SHAPES=${SHAPES:-off 8x32 16x64 4x16}
. bench/sbs-common.sh
sbs_unpack webgguf-gq
sbs_vulkan
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
run() { # ROUND MODEL SHAPE
  local g=1 sh=$3
  [ "$3" = off ] && g=0 sh=8x32
  local v=$(WEBGGUF_GPU_GLU_Q=$g WEBGGUF_GPU_GLU_Q_SHAPE=$sh timeout 120 .sbs/webgguf-gq bench --backend gpu --synthetic $2 -p 1 -n 64 -r 3 --json 2>>$OUT/err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$1 $2 $3 ${v:-fail}" | tee -a $OUT/ab.txt
}
for rd in 1 2; do
  for m in $MODELS; do
    sh=$SHAPES; [ $rd = 2 ] && sh=$(echo $SHAPES | tr ' ' '\n' | tac | tr '\n' ' ')
    for s in $sh; do run $rd $m $s; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
m=${MODELS%% *}
for g in 0 1; do
  WEBGGUF_GPU_GLU_Q=$g timeout 100 .sbs/webgguf-gq gpu-profile --synthetic $m -n 8 > $OUT/prof-${m/:/-}-g$g.json 2>>$OUT/err.log
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
    base = max(d.get('off', [0]))
    print(m, '  '.join('%s %s (%.3f)' % (s, xs, max(xs) / base if base else 0) for s, xs in d.items()))
PY
