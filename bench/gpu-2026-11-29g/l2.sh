#!/usr/bin/env bash
# 2026-11-29g, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI of main 86d2b2d plus l2/prefetch.patch (the prefetch.wgsl
# warm-ups, off unless WEBGGUF_GPU_PREFETCH is set; not kept, so main has
# no such knob) as .sbs/webgguf.gz and 23748aa's as .sbs/webgguf-base.gz.
# Synthetic files, tg64 medians.
#   1. L2 warm-ups: WEBGGUF_GPU_PREFETCH=MASK (1 q/k/v beside their
#      quantize pass, 2 Wo beside attention, 4 gate/up beside theirs),
#      16 MiB a product, in two rounds in opposite orders.
#   2. main's Q3_K 64-thread rule (6886c2f, in webgguf) against 23748aa.
#   3. gpu-profile of the 8B IQ4_XS with every warm-up.
#   bash bench/gpu-2026-11-29g/l2.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf webgguf-base
R=$OUT/l2.txt
pf() { # MODEL MASK..
  local m=$1; shift
  for p in "$@"; do
    echo "$m pf=$p $(TG_TIMEOUT=60 WEBGGUF_GPU_PREFETCH=$p sbs_tg .sbs/webgguf $m)" | tee -a $R
  done
}
pf llama-3.1-8b:IQ4_XS 0 7 3 4
pf llama-3.1-8b:Q4_K 0 7
pf llama-3.2-1b:Q4_K 0 7
pf llama-3.1-8b:IQ4_XS 4 3 7 0
pf llama-3.1-8b:Q4_K 7 0
pf llama-3.2-1b:Q4_K 7 0
for b in webgguf webgguf-base webgguf-base webgguf; do
  echo "q3 llama-3.1-8b:Q3_K $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b llama-3.1-8b:Q3_K)" | tee -a $R
done
WEBGGUF_GPU_PREFETCH=7 timeout 90 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 > $OUT/prof-iq4xs-pf7.json 2>&1
echo done | tee -a $R
