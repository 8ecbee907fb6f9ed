#!/usr/bin/env bash
# 2026-12-07h, second call (fresh machine, carry ['.sbs'] with this tree's
# CLI as webgguf and two diagnostic builds of it):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07h/diag.sh SECONDS
# What bounds split_sg.wgsl (sg.sh: 28.1 us a layer at 8192 keys in
# 16x128x2 against split.wgsl's 26.5): gpu-profile -d 8192 of the synthetic
# 8B Q4_K with split.wgsl and split_sg.wgsl 16x128x2 (webgguf), and
# split_sg.wgsl with its score shuffles replaced by a multiply-add (wrong
# sums, the same loads and softmax: wg-noshuf) and without its V sums'
# rescale each round (wg-norescale).
# The builds, from branch wip/split-sg (the CLI as .sbs/webgguf.gz, each
# diagnostic one gzipped as .sbs/wg-NAME.gz): in kernels::split_sg_src,
# wg-noshuf writes `s{k}_{v} += s{k}_{v} * 0.5;` where ROUND sums the
# scores by subgroupShuffleXor, and wg-norescale leaves out ROUND's
# `a{d}_{v} *= f{v};` lines.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_unpack wg-noshuf wg-norescale
for rd in 1 2; do
  WEBGGUF_GPU_DEEP_SG=0 sbs_prof split-r$rd llama-3.1-8b:Q4_K -d 8192
  WEBGGUF_GPU_DEEP_SG=16x128x2 sbs_prof sg-r$rd llama-3.1-8b:Q4_K -d 8192
  W=.sbs/wg-noshuf WEBGGUF_GPU_DEEP_SG=16x128x2 sbs_prof noshuf-r$rd llama-3.1-8b:Q4_K -d 8192
  W=.sbs/wg-norescale WEBGGUF_GPU_DEEP_SG=16x128x2 sbs_prof norescale-r$rd llama-3.1-8b:Q4_K -d 8192
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
