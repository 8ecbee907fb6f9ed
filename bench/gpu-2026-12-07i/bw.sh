#!/usr/bin/env bash
# 2026-12-07i (fresh machine, carry ['.sbs'] without the llama.cpp files,
# the CLI of this tree):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07i/bw.sh SECONDS
# 1. Which way of reading a buffer streams fastest through wgpu's Vulkan:
#    `gpu-bandwidth --shapes all` (bandwidth_shapes.wgsl: three access
#    orders x 128-1,024 threads x 1-16 loads a turn x 1-16 turns a thread,
#    every shape's sums checked), at 1 GiB in order and then reversed, and
#    at the binding limit (2,047 MiB); CUDA's read (the kit's bw.py) before
#    and after, on the same card. Our read_sum reads 2.67-2.88 TB/s on
#    H100s where CUDA's reads 3.06 (2026-12-07c, 07g).
# 2. Whether the cost of touching many distinct bytes (2026-12-07g: 1 GiB
#    from 32 buffers after each attention slows the 8B Q4_K's products
#    2.1-2.7 us a layer) changes when those bytes are one buffer's slices
#    (one driver allocation) instead of 32 buffers: gpu-profile --touch 32
#    --touch-bufs 32 with and without --touch-one, twice, alternating.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
python3 .sbs/bw.py > $R/torch-bw-1.json 2>> $R/pipeline.log
log "CUDA read 1: $(cut -c1-300 $R/torch-bw-1.json)"
all=$(python3 -c '
s=[f"{o}:{w}:{l}:{t}" for o in range(3) for w in (128,256,512,1024) for l in (1,2,4,8,16) for t in (1,4,16)]
print(",".join(s)); print(",".join(reversed(s)))')
fwd=$(echo "$all" | sed -n 1p); rev=$(echo "$all" | sed -n 2p)
timeout 200 $W gpu-bandwidth --mib 1024 -r 20 --json --shapes "$fwd" > $R/shapes-1024-a.json 2> $R/shapes-1024-a.err
log "shapes 1024 a rc=$? after $(( $(date +%s) - S )) s"
timeout 200 $W gpu-bandwidth --mib 1024 -r 20 --json --shapes "$rev" > $R/shapes-1024-b.json 2> $R/shapes-1024-b.err
log "shapes 1024 b rc=$? after $(( $(date +%s) - S )) s"
python3 .sbs/bw.py > $R/torch-bw-2.json 2>> $R/pipeline.log
log "CUDA read 2: $(cut -c1-300 $R/torch-bw-2.json)"
for rd in 1 2; do
  sbs_prof 8B-Q4_K-many-$rd llama-3.1-8b:Q4_K --touch 32 --touch-bufs 32
  sbs_prof 8B-Q4_K-one-$rd llama-3.1-8b:Q4_K --touch 32 --touch-bufs 32 --touch-one
done
timeout 200 $W gpu-bandwidth --mib 2047 -r 10 --json --shapes "$fwd" > $R/shapes-2047.json 2> $R/shapes-2047.err
log "shapes 2047 rc=$? after $(( $(date +%s) - S )) s"
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
