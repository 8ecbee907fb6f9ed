#!/usr/bin/env bash
# 2026-12-07f, one call on a fresh machine (carry ['.sbs'] with only the
# CLI and the Vulkan debs; no llama.cpp):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07f/clk.sh SECONDS
# Why the 8B Q4_K(_M) loses more decode time with depth than the Q8_0 with
# the same attention kernels (2026-12-07c/d: 20.3 against 16.8 us a layer
# at 8,192 keys). Two readings predict different things:
# - clocks: the card runs slower while a deep step runs (power or
#   temperature), and the Q4_K's products, which do more arithmetic per
#   byte, feel it more: nvidia-smi's clocks (every 100 ms) in each phase;
# - address translation: the Q4_K's 4.6 GB of weights plus the 1.1 GB
#   cache the deep steps read outgrow what the card's TLBs map where the
#   weights alone did not, while the Q8_0's 8.5 GB outgrew them already:
#   then the excess follows the file's size (Q4_0 as Q4_K, Q6_K and F16
#   as Q8_0), not its arithmetic (Q4_0 as Q8_0, Q6_K as Q4_K).
# So: tg64 after 0, 2,048 and 8,192 keys of the synthetic 8B in six types
# (sizes 4.4-16 GB, simple and K/IQ decoders), with the clocks logged;
# then gpu-profile at 8,192 twice on the Q4_K and the Q8_0 (2026-12-07d's
# Q8_0 profile at depth read every kernel ~3x slow once).
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
for t in Q4_K Q4_0 Q8_0 Q6_K IQ4_XS F16 Q4_K; do
  log "bench $t begin"
  timeout 150 $W bench --synthetic llama-3.1-8b:$t --backend gpu --ctx 8448 -p 1 -n 64 -d 0,2048,8192 -r 3 --json > $R/bench-$t.json 2> $R/bench-$t.err
  log "bench $t rc=$? after $(( $(date +%s) - S )): $(grep -o '"tg_median_tok_s":[0-9.]*' $R/bench-$t.json | tr '\n' ' ')"
done
for t in Q4_K Q8_0 Q4_K Q8_0; do
  log "profile $t begin"
  timeout 90 $W gpu-profile --synthetic llama-3.1-8b:$t -n 16 -d 8192 > $R/depth-$t-$(date +%s).json 2> $R/depth-$t.err
  log "profile $t rc=$? after $(( $(date +%s) - S )) s"
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
