# Started by the kit's pipeline (go12.sh patches it in) after its
# bandwidth steps, while llama.cpp builds and quantizes (CPUs busy: the
# bench figures here are for comparing with each other, interleaved, not
# with the kit's):
# 1. every gpu:: test of main on the H100;
# 2. gate/up bandwidth per format (gpu-profile, synthetic 8B, one type
#    per file; GPU timestamps, so busy CPUs do not move them) for the
#    formats whose shapes 7ff1358 changed, and Q4_K as the control;
# 3. decode at depth by split.wgsl's shape (WEBGGUF_GPU_DEEP_SHAPE=LxT:
#    L keys a split, T threads a key; 64x4 is main's), synthetic Q4_K,
#    tg64 medians after d keys, two rounds; per model the shape with the
#    best mean ratio to 64x4 goes to $R/deep-best-MODEL for extra12.sh.
set -u
W=${W:-/tmp/sbs}; R=${R:-/tmp/res}
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
for t in IQ4_XS IQ4_NL Q2_K Q3_K Q4_K; do
  timeout 150 nice -n -10 $W/webgguf gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
  python3 - $t <<'PY'
import json, sys
t = sys.argv[1]
bpw = dict(Q2_K=2.625, Q3_K=3.4375, Q4_K=4.5, IQ4_XS=4.25, IQ4_NL=4.5)[t]
try:
    d = json.load(open('/tmp/p.json'))
except Exception as e:
    print(t, 'no profile', e); sys.exit()
k = {x['kernel']: x['us'] for x in d['kernels_decode']['by_kernel']}
b = 2 * 14336 * 4096 * 32 * bpw / 8
print('fam %-7s gate/up %7.1f us %6.0f GB/s  matvec %7.1f  qkv %6.1f' % (t, k['gate_up'], b / k['gate_up'] / 1e3, k['matvec'], k['qkv']), flush=True)
PY
done
echo "profiles after $(( $(date +%s) - S )) s"
for rd in 1 2; do
  for m in llama-3.1-8b llama-3.2-1b; do
    for dep in 2048 8192; do
      for sh in 64x4 32x8 128x2 32x4; do
        v=$(WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 150 nice -n -10 $W/webgguf bench --backend gpu --synthetic $m:Q4_K -p 1 -n 64 -r 3 -d $dep --ctx $((dep + 256)) --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
        echo "deep $rd $m $dep $sh ${v:-fail}" | tee -a $R/deep.txt
      done
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
python3 - $R <<'PY'
import sys, collections
R = sys.argv[1]
v = collections.defaultdict(list)
for l in open(R + '/deep.txt'):
    _, rd, m, dep, sh, x = l.split()
    if x != 'fail':
        v[(m, dep, sh, rd)].append(float(x))
for m in {k[0] for k in v}:
    score = {}
    for sh in ('64x4', '32x8', '128x2', '32x4'):
        r = [v[(m, d, sh, rd)][0] / v[(m, d, '64x4', rd)][0] for d in ('2048', '8192') for rd in ('1', '2')
             if v.get((m, d, sh, rd)) and v.get((m, d, '64x4', rd))]
        if len(r) == 4:
            score[sh] = sum(r) / 4
    best = max(score, key=score.get)
    print('deep best', m, best, {k: round(x, 3) for k, x in score.items()})
    open(f'{R}/deep-best-{m}', 'w').write(best)
PY
