#!/usr/bin/env bash
# 2026-12-07f, second call (carry ['.sbs'] with only the CLI and the
# Vulkan debs), the CLI of main with gpu-profile's warm-up by time:
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07f/tlb.sh SECONDS
# clk.sh found the clocks steady through every deep decode (1,980 MHz) and
# the excess in the file's size, not its arithmetic: Q4_0 adds what Q4_K
# adds at 8,192 keys, the larger files less. gpu-profile repeated it: the
# Q4_K's gate/up timed alone reads 6% slower after a deep attention, the
# Q8_0's 1.3%. One reading is address translation: 4.6 GB of weights fit
# what the card's TLBs map, plus the cache that a deep step reads (128 KB
# a key on the 8B) they do not. Then the products' slowdown grows with
# the keys read and only past some total, it does not show on the 1B
# (0.8 GB of weights and 268 MB of cache at 8,192), and it shows less on
# files that outgrow the TLBs alone (Q6_K 6.6 GB, Q8_0, F16).
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
prof() { # MODEL DEPTH
  log "profile $1 -d $2 begin"
  timeout 90 $W gpu-profile --synthetic $1 -n 16 -d $2 > $R/prof-$(echo ${1#llama-} | tr : -)-d$2.json 2> $R/prof.err
  log "profile $1 -d $2 rc=$? after $(( $(date +%s) - S )) s"
}
for d in 2048 4096 6144 8192; do prof llama-3.1-8b:Q4_K $d; done
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q8_0; do prof $m 8192; done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
