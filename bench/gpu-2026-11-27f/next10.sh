# Started by the kit's pipeline (go10.sh patches it in) after its bandwidth
# steps, while llama.cpp builds and quantizes: every gpu:: test of main on
# the H100, then synthetic A/Bs at nice -10 (the CPUs are busy building, so
# these figures are A/B only, interleaved, never compared with the kit's):
# tg128 of main against df20df5 (before this session: the wide decoders'
# offset off the x sums, Q3_K's 21 loads) on Q4_0, Q5_0, Q3_K and Q4_K (a
# control: unchanged); tg32 at depth 2048 and 8192 with the context
# allocated at 8448 and 131072 keys (main sizes decode's split dispatch by
# the keys, df20df5 by the context).
set -u
W=${W:-/tmp/sbs}
for f in $W/tests-lib.gz $W/webgguf-base.gz; do gunzip -kf $f; chmod +x ${f%.gz}; done
cp $W/webgguf $W/webgguf-main
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED|split_|wide_int|flash_coop" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $* | $(timeout 150 nice -n -10 $W/webgguf-$b bench --backend gpu "$@" 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_0 llama-3.1-8b:Q5_0 llama-3.1-8b:Q3_K llama-3.1-8b:Q4_K llama-3.2-1b:Q4_0 llama-3.2-1b:Q3_K; do
    for b in base main; do r $b --synthetic $m -p 1 -n 128 -r 3; done
  done
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do for c in 8448 131072; do
    for b in base main; do r $b --synthetic $m --ctx $c -p 1 -n 32 -r 2 -d 2048,8192; done
  done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for t in Q4_0 Q5_0 Q3_K; do for b in base main; do
  timeout 100 nice -n -10 $W/webgguf-$b gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
  echo "profile 8B $t $b: $(python3 -c "
import json
d = json.load(open('/tmp/p.json'))['kernels_decode']['by_kernel']
print(' '.join('%s=%.1f' % (k['kernel'], k['us']) for k in d if k['kernel'] in ('gate_up', 'matvec', 'qkv', 'lm_head')))
" 2>&1 | tail -1)"
done; done
echo "done after $(( $(date +%s) - S )) s"
