# Started by the kit's pipeline (go14.sh patches it in) after its
# bandwidth steps, while llama.cpp builds and quantizes (CPUs busy: the
# bench figures here are for comparing with each other, interleaved, not
# with the kit's):
# 1. every gpu:: test of wip/chunks on the H200 (the chunked shapes too);
# 2. decode at depth by split.wgsl's chunks a split
#    (WEBGGUF_GPU_DEEP_SHAPE=LxTxC, wip/chunks' CLI; 64x4x1 is main's
#    kernel), synthetic Q4_K, tg64 medians after d keys, two rounds; per
#    model the shape with the best ratio to 64x4x1 at 8192 keys goes to
#    $R/deep-best-MODEL for extra14.sh;
# 3. gpu-profile at 8192 keys (synthetic 8B Q4_K) by chunks.
set -u
W=${W:-/tmp/sbs}; R=${R:-/tmp/res}
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
VARS="64x4x1 64x4x2 64x4x4"
for rd in 1 2; do
  for m in llama-3.1-8b llama-3.2-1b; do
    for dep in 2048 8192; do
      for sh in $VARS; do
        v=$(WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 150 nice -n -10 $W/webgguf-wip bench --backend gpu --synthetic $m:Q4_K -p 1 -n 64 -r 3 -d $dep --ctx $((dep + 256)) --json 2>>$R/next-err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
        echo "deep $rd $m $dep $sh ${v:-fail}" | tee -a $R/deep.txt
      done
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for sh in $VARS; do
  WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 150 nice -n -10 $W/webgguf-wip gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 > $R/prof-d8192-8b-$sh.json 2>>$R/next-err.log
done
echo "profiles after $(( $(date +%s) - S )) s"
python3 - $R <<'PY'
import sys, collections
R = sys.argv[1]
v = collections.defaultdict(list)
for l in open(R + '/deep.txt'):
    _, rd, m, dep, sh, x = l.split()
    if x != 'fail':
        v[(m, dep, sh)].append(float(x))
for m in sorted({k[0] for k in v}):
    score = {}
    for sh in ('64x4x2', '64x4x4'):
        for d in ('2048', '8192'):
            a, b = v.get((m, d, sh)), v.get((m, d, '64x4x1'))
            if a and b and len(a) == len(b):
                r = sum(x / y for x, y in zip(a, b)) / len(a)
                print('deep ratio', m, d, sh, round(r, 3))
                if d == '8192':
                    score[sh] = r
    if score:
        best = max(score, key=score.get)
        if score[best] > 1.0:
            print('deep best', m, best)
            open(f'{R}/deep-best-{m}', 'w').write(best)
PY
