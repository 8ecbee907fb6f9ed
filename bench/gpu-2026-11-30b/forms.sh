#!/usr/bin/env bash
# 2026-11-30b, second call, carry ['.sbs']: the same tree with the forms
# forcible (WEBGGUF_GPU_F16_ROUND=soft|pack|cast). round.sh found the
# probe picking the hand-made form on the H200 (both conversions failed
# the check), so: what they got wrong, by kind of value (the probe test's
# report), the four tests that failed there (naga compiles of sources
# without round_f16), and tg64 with each form forced, as a bound on what
# a conversion that passes could give (the forced ones may be wrong).
#   bash bench/gpu-2026-11-30b/forms.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
sbs_unpack tests-lib
S=$(date +%s)
.sbs/tests-lib --test-threads 1 --nocapture f16_round_probe source_compiles 2>&1 | grep -v XDG | cut -c1-2000 | tee $OUT/probe.txt
sbs_ab $OUT/forms.txt "llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q4_0" \
  soft:webgguf:WEBGGUF_GPU_F16_ROUND=soft pack:webgguf:WEBGGUF_GPU_F16_ROUND=pack cast:webgguf:WEBGGUF_GPU_F16_ROUND=cast
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/forms.txt
