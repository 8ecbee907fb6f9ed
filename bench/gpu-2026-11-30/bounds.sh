#!/usr/bin/env bash
# 2026-11-30, one short device call, carry ['.sbs'] with branch
# wip/bounds' CLI as .sbs/webgguf.gz (main 313c4fd plus two timing-only
# knobs, wrong values, never on main): WEBGGUF_BOUND_NONORM=1 makes the
# quantize pass (and own x) skip the rmsnorm's row sum; WEBGGUF_BOUND_SKIP=
# LABEL,.. drops those ops from the one-token layer lists. What each
# bounds:
#   nonorm: a quantize pass that needs no whole-row sum (the norm's scale
#     taken out of the int8 blocks and applied by the product);
#   skipq: the quantize passes gone altogether (fused elsewhere);
#   ownnn against nonorm: gate/up quantizing its own x at 4,096 columns
#     when that needs no row sum;
#   nomerge at depth: the attention merge fused into split.wgsl.
#   bash bench/gpu-2026-11-30/bounds.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
S=$(date +%s)
for b in 1; do sbs_tg .sbs/webgguf llama-3.1-8b:IQ4_XS > /dev/null; done
sbs_ab $OUT/bounds.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K" \
  base:webgguf nonorm:webgguf:WEBGGUF_BOUND_NONORM=1 \
  skipq:webgguf:WEBGGUF_BOUND_SKIP=quantize_x \
  ownnn:webgguf:WEBGGUF_BOUND_NONORM=1,WEBGGUF_GPU_OWN_X=4096
echo "tg after $(( $(date +%s) - S )) s" | tee -a $OUT/bounds.txt
deep() { # LABEL DEPTH [ENV=..]
  local label=$1 dep=$2; shift 2
  local v=$(env "$@" timeout 90 .sbs/webgguf bench --backend gpu --synthetic llama-3.1-8b:Q4_K -p 1 -n 64 -r 3 -d $dep --ctx $((dep + 256)) --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "deep $rd $dep $label ${v:-fail}" | tee -a $OUT/bounds.txt
}
for rd in 1 2; do
  for dep in 8192 2048; do
    if [ $rd = 1 ]; then deep base $dep; deep nomerge $dep WEBGGUF_BOUND_SKIP=attention_merge
    else deep nomerge $dep WEBGGUF_BOUND_SKIP=attention_merge; deep base $dep; fi
  done
done
echo "deep after $(( $(date +%s) - S )) s" | tee -a $OUT/bounds.txt
for v in base nonorm; do
  e=; [ $v = nonorm ] && e=WEBGGUF_BOUND_NONORM=1
  env $e timeout 60 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 8 > $OUT/prof-$v.json 2>/dev/null
  python3 -c "
import json
d=json.load(open('$OUT/prof-$v.json'))
print('$v', round(d['steps']['median_us']['gpu_pass']), ', '.join('%s %.0f'%(k['kernel'],k['us']) for k in d['kernels_decode']['by_kernel']))
" | tee -a $OUT/bounds.txt
done
sbs_ab $OUT/bounds.txt "llama-3.2-1b:Q4_K" base:webgguf nonorm:webgguf:WEBGGUF_BOUND_NONORM=1 skipq:webgguf:WEBGGUF_BOUND_SKIP=quantize_x
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/bounds.txt
