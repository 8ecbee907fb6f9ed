# Started by the kit's pipeline (go15.sh patches it in) after its
# bandwidth steps, while llama.cpp builds and quantizes (CPUs busy: the
# bench figures here are for comparing with each other, interleaved, not
# with the kit's):
# 1. every gpu:: test of main (b364667) on the H200;
# 2. decode at depth, synthetic Q4_K, tg64 medians after d keys, two
#    rounds, interleaved: main (`new`: merge in 32-dimension parts, far
#    tier from 4096 keys), main with whole-head merges (`m0`,
#    WEBGGUF_GPU_MERGE_DIMS=0), 39c3667's CLI (`old`: one chunk a split
#    in the kernel before NC chunks, whole-head merges), and on the 8B
#    main with the far tier off (`far0`) and from 2048 keys (`far2k`);
# 3. gpu-profile at 8192 keys (synthetic 8B Q4_K), new and m0.
set -u
W=${W:-/tmp/sbs}; R=${R:-/tmp/res}
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
run() { # LABEL MODEL DEPTH [ENV=.. ..] BINARY
  local label=$1 m=$2 dep=$3; shift 3
  local v=$(env "$@" bench --backend gpu --synthetic $m:Q4_K -p 1 -n 64 -r 3 -d $dep --ctx $((dep + 256)) --json 2>>$R/next-err.log | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "deep $rd $m $dep $label ${v:-fail}" | tee -a $R/deep.txt
}
for rd in 1 2; do
  for m in llama-3.1-8b llama-3.2-1b; do
    for dep in 2048 4096 8192; do
      run new $m $dep timeout 150 nice -n -10 $W/webgguf
      run m0 $m $dep WEBGGUF_GPU_MERGE_DIMS=0 timeout 150 nice -n -10 $W/webgguf
      run old $m $dep timeout 150 nice -n -10 $W/webgguf-old
      if [ $m = llama-3.1-8b ]; then
        run far0 $m $dep WEBGGUF_GPU_DEEP_FAR_KEYS=0 timeout 150 nice -n -10 $W/webgguf
        run far2k $m $dep WEBGGUF_GPU_DEEP_FAR_KEYS=2048 timeout 150 nice -n -10 $W/webgguf
      fi
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
timeout 150 nice -n -10 $W/webgguf gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 > $R/prof-d8192-8b-new.json 2>>$R/next-err.log
WEBGGUF_GPU_MERGE_DIMS=0 timeout 150 nice -n -10 $W/webgguf gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 > $R/prof-d8192-8b-m0.json 2>>$R/next-err.log
echo "profiles after $(( $(date +%s) - S )) s"
python3 - $R <<'PY'
import sys, collections
R = sys.argv[1]
v = collections.defaultdict(list)
for l in open(R + '/deep.txt'):
    _, rd, m, dep, label, x = l.split()
    if x != 'fail':
        v[(m, dep, label)].append(float(x))
for (m, dep, label) in sorted(v):
    a, b = v[(m, dep, label)], v.get((m, dep, 'new'))
    if b and len(a) == len(b):
        print('deep ratio to new', m, dep, label, round(sum(x / y for x, y in zip(a, b)) / len(a), 3))
PY
