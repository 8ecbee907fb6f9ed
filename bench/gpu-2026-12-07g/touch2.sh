#!/usr/bin/env bash
# 2026-12-07g, second call (ran: res-touch2/; fresh machine, carry ['.sbs'], the CLI of
# wip/robust, whose gpu-profile --touch is main's):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07g/touch2.sh SECONDS
# rob.sh found the products slow after reads of many distinct bytes, not
# after the same bytes read again. Here the footprint is varied with the
# bytes read held: 32 MiB after each layer's attention from N buffers in
# turn (N = 4, 8, 16: 128 to 512 MiB touched a step; rob.sh had 32, 1 GiB),
# then 128 MiB from 32 (4 GiB); the 1B Q4_K (0.8 GB of weights, 16
# layers) with 32 and 128 MiB from 16 (0.5 and 2 GiB); the 8B F16 (15 GB)
# with 32 from 32.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
for nb in 4 8 16; do sbs_prof 8B-Q4_K-t32x$nb llama-3.1-8b:Q4_K --touch 32 --touch-bufs $nb; done
sbs_prof 8B-Q4_K-t128x32 llama-3.1-8b:Q4_K --touch 128 --touch-bufs 32
sbs_prof 1B-Q4_K-t32x16 llama-3.2-1b:Q4_K --touch 32 --touch-bufs 16
sbs_prof 1B-Q4_K-t128x16 llama-3.2-1b:Q4_K --touch 128 --touch-bufs 16
sbs_prof 8B-F16-t32x32 llama-3.1-8b:F16 --touch 32 --touch-bufs 32
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
