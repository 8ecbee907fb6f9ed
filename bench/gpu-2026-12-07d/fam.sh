#!/usr/bin/env bash
# 2026-12-07d, one call on a fresh machine (carry ['.sbs'] with only the
# CLI and the Vulkan debs; no llama.cpp):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07d/fam.sh SECONDS
# (a) The per-family table on the machine lent, main 7906d9e's CLI:
# gpu-profile of a synthetic llama-3.1-8b in each matvec family (every
# matrix in that type), so that each family's gate/up, 2 x 14336 x 4096
# a layer, is timed alone in one run on one machine (the table so far
# mixes machines and dates). (b) Why the real 8B Q4_K_M's layers gain more
# time with depth than its Q8_0's with the same attention kernels
# (2026-12-07c, and on the H200): gpu-profile at position 8,192 and
# tg64 after 0, 2,048 and 8,192 keys of the synthetic 8B Q4_K and Q8_0.
# Results in /tmp/res: gpu-bandwidth.json, prof-TYPE.json, depth-TYPE.json,
# bench-TYPE.json.
set -u
R=/tmp/res
W=.sbs/webgguf
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
timeout 60 $W gpu-bandwidth --mib 1024 -r 10 --json > $R/gpu-bandwidth.json 2>&1
log "bandwidth: $(tail -c 200 $R/gpu-bandwidth.json)"
for t in Q4_K IQ4_XS Q8_0 Q4_0 Q6_K Q5_K F16 BF16 Q4_1 Q5_0 Q5_1 Q2_K Q3_K IQ4_NL; do
  timeout 90 $W gpu-profile --synthetic llama-3.1-8b:$t -n 16 > $R/prof-$t.json 2> $R/prof-$t.err
  log "profile $t rc=$? after $(( $(date +%s) - S )) s"
done
for t in Q4_K Q8_0; do
  timeout 90 $W gpu-profile --synthetic llama-3.1-8b:$t -n 16 -d 8192 > $R/depth-$t.json 2> $R/depth-$t.err
  log "profile at 8192 $t rc=$? after $(( $(date +%s) - S )) s"
  timeout 120 $W bench --synthetic llama-3.1-8b:$t --backend gpu --ctx 8448 -p 1 -n 64 -d 0,2048,8192 -r 3 --json > $R/bench-$t.json 2> $R/bench-$t.err
  log "bench depth $t rc=$? after $(( $(date +%s) - S )): $(grep -o '"tg_median_tok_s":[0-9.]*' $R/bench-$t.json | tr '\n' ' ')"
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
