#!/usr/bin/env bash
# 2026-11-30b, one short device call, carry ['.sbs']: .sbs/webgguf.gz and
# .sbs/tests-lib.gz = the working tree on main cb6f6cf with the load-time
# f16 rounding check (src/gpu/probe.rs): round_f16 through the device's
# own conversion where it rounds as `half` does. What the probe picks on
# the H200 (the adapter line), every gpu:: test, then tg64 (positions
# 1-65: few.wgsl's f16 replay) with the device's rounding and with the
# hand-made one forced (WEBGGUF_GPU_NATIVE_F16_ROUND=0), two rounds in
# opposite orders.
#   bash bench/gpu-2026-11-30b/round.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
sbs_unpack tests-lib
S=$(date +%s)
.sbs/webgguf gpu-bandwidth --mib 256 -r 3 2>&1 | tee $OUT/bandwidth.txt | grep -o "f16 rounding: [A-Za-z]*"
sbs_tests $OUT/tests.txt
sbs_ab $OUT/round.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q4_0" \
  hand:webgguf:WEBGGUF_GPU_NATIVE_F16_ROUND=0 native:webgguf
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/round.txt
