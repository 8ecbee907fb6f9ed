#!/usr/bin/env bash
# 2026-11-30, one short device call, carry ['.sbs']: .sbs/old.gz = main
# 313c4fd's CLI (wip/bounds' binary, knobs off), .sbs/webgguf.gz = main
# e854b10 (the pass leaves the norm's scale to the product), .sbs/few.gz
# = branch wip/few on e854b10 (few.wgsl's replay: a RING's loads at once,
# one rescale branch a RING). tg64 (positions 1-65: few.wgsl's range),
# two rounds in opposite orders.
#   bash bench/gpu-2026-11-30/few.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old few
sbs_ab $OUT/few.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K" \
  main313:old sq:webgguf few:few
