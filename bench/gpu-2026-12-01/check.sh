#!/usr/bin/env bash
# 2026-12-01, fifth call (carry ['.sbs']): .sbs/webgguf.gz and
# .sbs/tests-lib.gz from the tree with few.wgsl's replay rounding through
# pack2x16float behind the load-time check (probe.rs). The check's
# verdict on the H200 (round_check_tells_exact_from_truncating prints
# it), every gpu:: test, then tg64 with the check's form against
# WEBGGUF_GPU_ROUND_PACK=0 (by hand) in the same binary, two rounds in
# opposite orders.
#   bash bench/gpu-2026-12-01/check.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
sbs_unpack tests-lib
S=$(date +%s)
.sbs/tests-lib --test-threads 1 --nocapture gpu::tests::round_check 2>&1 | grep -E "rounds exactly|test result|panicked" | tee $OUT/verdict.txt
sbs_tests $OUT/tests.txt
sbs_ab $OUT/ab.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0" \
  pack:webgguf hand:webgguf:WEBGGUF_GPU_ROUND_PACK=0
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/ab.txt
