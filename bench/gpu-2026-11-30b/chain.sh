#!/usr/bin/env bash
# 2026-11-30b, eighth call (not kept: even), carry ['.sbs']: .sbs/webgguf.gz = main
# 9d90316 plus round_f16 with a shorter dependent chain (the sign kept in
# the bits, inf picked from the input's magnitude) and head_q.wgsl's
# block max in two steps; .sbs/old.gz = main 9d90316;
# .sbs/tests-lib.gz = the new tree's library tests. The tests of the
# kernels they touch on the H200 (round_f16 bit for bit against half on
# every boundary case, few, mid, chunked attention, gelu), then tg64 both
# ways, two rounds in opposite orders.
#   bash bench/gpu-2026-11-30b/chain.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
sbs_unpack tests-lib
S=$(date +%s)
.sbs/tests-lib --test-threads 1 round_f16_matches few_attention mid_attention attention_matches gelu_mul 2>&1 | grep -E "^test |test result|panicked" | cut -c1-300 | tee $OUT/tests.txt
sbs_ab $OUT/chain.txt "llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q4_0" \
  main:old chain:webgguf
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/chain.txt
