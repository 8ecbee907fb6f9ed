#!/usr/bin/env bash
# 2026-11-30, one short device call, carry ['.sbs'] with wip/bounds' CLI
# as .sbs/old.gz (bounds.patch): what decode attention below 64 keys
# (few.wgsl) costs an 8B's tg64 from position 1: the one-token lists
# without their "attention" ops (WEBGGUF_BOUND_SKIP=attention; wrong
# values, timing only) against the same binary with them, two rounds in
# opposite orders.
#   bash bench/gpu-2026-11-30/attn.sh
set -u
. bench/sbs-common.sh
sbs_short old
sbs_ab $OUT/attn.txt "llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K" \
  base:old noattn:old:WEBGGUF_BOUND_SKIP=attention
