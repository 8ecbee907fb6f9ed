# Started by the kit's pipeline (go11.sh patches it in) after its bandwidth
# steps, while llama.cpp builds and quantizes: every gpu:: test of main
# (kernels compiled without naga's loop counters) on the H100, then
# synthetic A/Bs at nice -10 (the CPUs are busy building, so these
# figures are A/B only, interleaved, never compared with the kit's): one
# binary with the counters (WEBGGUF_GPU_LOOP_BOUND=1, wgpu's default) and
# without (main's default), on the smaller shapes (the issue allows them
# 3%) and the 8B Q4_K's prefill.
set -u
W=${W:-/tmp/sbs}
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local lb=$1; shift; echo "== bound=$lb $* | $(WEBGGUF_GPU_LOOP_BOUND=$lb timeout 150 nice -n -10 $W/webgguf bench --backend gpu "$@" 2>&1 | grep -E 'pp|tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
for rd in 1 2; do
  for m in smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0 gemma3-270m:Q8_0 llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:F16; do
    for lb in 1 0; do r $lb --synthetic $m -p 512 -n 128 -r 3; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
