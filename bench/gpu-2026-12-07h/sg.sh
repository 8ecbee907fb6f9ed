#!/usr/bin/env bash
# 2026-12-07h, first call (fresh machine, carry ['.sbs'] with the CLI and
# the lib tests of this session's split_sg.wgsl tree):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07h/sg.sh SECONDS
# split_sg.wgsl (WEBGGUF_GPU_DEEP_SG=LxTxU) against split.wgsl (0): its
# kernel test on the H100's 32-lane subgroups (the 16-lane shape lavapipe
# cannot run), then gpu-profile at 8192 keys of the synthetic 8B Q4_K
# (each dispatch timed alone: the split kernel's us a layer), then tg64
# after 2048 and 8192 keys, every variant in order and reversed.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
gunzip -f .sbs/tests-lib.gz && chmod +x .sbs/tests-lib
.sbs/tests-lib --test-threads 1 split_attention_matches_cpu split_sg_source layer_lists 2>&1 \
  | grep -E "^test |test result|panicked|SKIPPED" | cut -c1-300 > $R/tests.txt
log "tests: $(grep 'test result' $R/tests.txt)"
V8="0 8x128x2 16x128x2 16x128x4 8x128x4 16x256x2 16x64x2"
for v in $V8; do
  WEBGGUF_GPU_DEEP_SG=$v sbs_prof 8B-Q4_K-d8192-sg$v llama-3.1-8b:Q4_K -d 8192
done
# Split lengths with the 16-lane shape: 32 keys (64 in the far tier) and
# 128 (256).
for sh in 32x4 128x2; do
  WEBGGUF_GPU_DEEP_SG=16x128x2 WEBGGUF_GPU_DEEP_SHAPE=$sh sbs_prof 8B-Q4_K-d8192-sg16x128x2-len$sh llama-3.1-8b:Q4_K -d 8192
done
dep() { # LABEL MODEL VARIANT
  WEBGGUF_GPU_DEEP_SG=$3 timeout 120 $W bench --backend gpu --synthetic $2 -p 1 -n 64 \
    -d 2048,8192 -r 3 --ctx 8300 --json 2>/dev/null | grep '^{' > $R/dep-$1-sg$3-r$rd.json
  log "dep $1 sg$3 r$rd rc=$? $(python3 -c 'import json,sys; print(" ".join("d%d %.1f" % (j["depth"], j["tg_median_tok_s"]) for j in map(json.loads, open(sys.argv[1]))))' $R/dep-$1-sg$3-r$rd.json 2>&1 | tail -1)"
}
V1="0 8x128x2 4x128x2"
VT="0 8x128x2 16x128x2 16x128x4 16x256x2"
for rd in 1 2; do
  vs=$VT; [ $rd = 2 ] && vs=$(echo $VT | tr ' ' '\n' | tac | tr '\n' ' ')
  for v in $vs; do dep 8B-Q4_K llama-3.1-8b:Q4_K $v; done
  vs=$V1; [ $rd = 2 ] && vs=$(echo $V1 | tr ' ' '\n' | tac | tr '\n' ' ')
  for v in $vs; do dep 1B-Q4_K llama-3.2-1b:Q4_K $v; done
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
