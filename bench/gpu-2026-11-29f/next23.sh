# Run by the kit's pipeline (go23.sh patches it in) while llama.cpp
# quantizes: the padded Q3_K binary (webgguf) against main before it
# (webgguf-base), synthetic files, tg64 medians, two rounds with the pair
# swapped; Q2_K and Q4_K beside (their code did not change); then a
# profile of the 8B Q3_K both ways and every gpu:: test of the change.
cd /tmp/sbs
. ./sbs-common.sh
for rd in 1 2; do
  for m in llama-3.1-8b:Q3_K llama-3.2-1b:Q3_K llama-3.1-8b:Q2_K llama-3.1-8b:Q4_K; do
    bs="webgguf webgguf-base"; [ $rd = 2 ] && bs="webgguf-base webgguf"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg ./$b $m)"
    done
  done
done
for b in webgguf webgguf-base; do
  timeout 120 ./$b gpu-profile --synthetic llama-3.1-8b:Q3_K -n 4 > /tmp/p.json 2>/dev/null
  python3 -c "
import json; d=json.load(open('/tmp/p.json'))
print('profile $b Q3_K', ' '.join('%s=%.0f' % (x['kernel'], x['us']) for x in d['kernels_decode']['by_kernel']))"
done
[ -x ./tests-lib ] && { s=$(date +%s); ./tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked" | cut -c1-300; echo "tests after $(( $(date +%s) - s )) s"; }
