#!/usr/bin/env bash
# 2026-11-30b, seventh call, carry ['.sbs']: .sbs/bound.gz = main 99f88eb
# (few.wgsl staged and grouped) plus 2026-11-30's WEBGGUF_BOUND_SKIP knob
# (bounds.patch's build.rs hunk alone: the one-token lists without the
# ops of that label; wrong values). What decode attention below 64 keys
# still costs: tg64 from position 1 with and without it, two rounds in
# opposite orders (2026-11-30's attn/ before the change: +9.5-19.4%).
#   bash bench/gpu-2026-11-30b/attn.sh
set -u
. bench/sbs-common.sh
sbs_short bound
sbs_ab $OUT/attn.txt "llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K" \
  base:bound noattn:bound:WEBGGUF_BOUND_SKIP=attention
