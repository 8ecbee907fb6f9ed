# Started by the kit's pipeline (go9.sh patches it in) after its bandwidth
# steps, while llama.cpp builds and quantizes: every gpu:: test of next2 on
# the device (flash_coop_matches_cpu runs only where cooperative matrices
# exist), then synthetic A/Bs, interleaved, at nice -10: prefill with
# flash_coop.wgsl off/on (prefill profile and pp512), decode at depth 2048
# and 8192 with mid.wgsl's splits off/on.
set -u
W=${W:-/tmp/sbs}; X=$W/webgguf
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED|flash_coop|split_att" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
prof() { local m=$1; shift; env "$@" timeout 150 nice -n -10 $X gpu-profile --synthetic $m -n 2 > /tmp/p.json 2>/tmp/p.err
  python3 -c "
import json
d=json.load(open('/tmp/p.json'))['kernels_prefill']
print('profile $m $*:', ' '.join('%s=%.0f'%(k['kernel'],k['us']) for k in d['by_kernel'] if k['us']>200), 'sum=%.0f'%d['sum_of_kernels_us'])
" 2>&1 || tail -3 /tmp/p.err; }
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0; do
  prof $m WEBGGUF_GPU_FLASH_COOP=0
  prof $m WEBGGUF_GPU_FLASH_COOP=1
done
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    for v in 0 1; do
      echo "== pp512 $m FLASH_COOP=$v $(WEBGGUF_GPU_FLASH_COOP=$v timeout 100 nice -n -10 $X bench --backend gpu --synthetic $m -p 512 -n 4 -r 3 2>&1 | grep -E 'pp512|rror' | tr -s ' ' | cut -c1-160)"
    done
  done
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
    for v in 0 1; do
      echo "== depth $m DEEP_MID=$v"
      WEBGGUF_GPU_DEEP_MID=$v timeout 150 nice -n -10 $X bench --backend gpu --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192 2>&1 | grep -E "tg|rror" | tr -s ' '
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
