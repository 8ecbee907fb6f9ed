#!/usr/bin/env bash
# Call 2 of 2026-12-02e (detached by start.sh; results in /tmp/res; carry
# ['.sbs'], no llama.cpp): (a) every gpu:: test of main f76770a's lib test
# binary on the H200 (group_rows' section from the workgroup's first row
# group, for Tint), writing every module it builds (WEBGGUF_TEST_WGSL) into
# wgsl.tgz for tests/tint/check.mjs here: the 16-lane code book and the
# H200's shapes, which lavapipe's tests do not build; (b) what the q/k/v
# epilogue's rope loop costs: gpu-profile and tg64 of main against
# wip/rope-pow (timing only: theta by pow, not llama.cpp's rounding) on
# synthetic 8B F16 and Q4_K, two rounds in opposite orders.
set -u
R=/tmp/res
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
gunzip -f .sbs/webgguf-rp.gz .sbs/tests-lib.gz; chmod +x .sbs/webgguf-rp .sbs/tests-lib
mkdir -p /tmp/wgsl
WEBGGUF_TEST_WGSL=/tmp/wgsl .sbs/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300 | tee $R/tests.txt >> $R/pipeline.log
tar czf $R/wgsl.tgz -C /tmp wgsl
log "tests done after $(( $(date +%s) - S )) s: $(ls /tmp/wgsl | wc -l) modules"
for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K; do
  for b in webgguf webgguf-rp; do
    timeout 150 .sbs/$b gpu-profile --synthetic $m -n 32 > $R/prof-$b-${m#*:}.json 2> $R/prof-$b-${m#*:}.err
    log "profile $b $m rc=$?"
  done
done
tg() { timeout 120 .sbs/$1 bench --backend gpu --synthetic $2 -p 1 -n 64 -r 3 --json 2>/dev/null \
  | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:F16; do
    bs="webgguf webgguf-rp"; [ $rd = 2 ] && bs="webgguf-rp webgguf"
    for b in $bs; do echo "$rd $m $b $(tg $b $m)" | tee -a $R/rope-tg.txt >> $R/pipeline.log; done
  done
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
