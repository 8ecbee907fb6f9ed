#!/usr/bin/env bash
# 2026-12-07g, one call on a fresh machine (carry ['.sbs'] with only the
# CLI and the Vulkan debs; no llama.cpp):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07g/rob.sh SECONDS
# What the bounds checks cost. wgpu opens NVIDIA's Vulkan device with
# robustBufferAccess(2) on, so the driver bounds-checks every buffer load,
# and naga clamps every index into a workgroup or function array. Our WGSL
# read kernel reaches 2.67 TB/s on the H100 where CUDA's read reaches 3.06
# (2026-12-07c), and the 8B F16 and IQ4_XS decode at 0.96-0.97x llama.cpp.
# Variants (the CLI of branch wip/robust): D default; B naga's bounds
# checks off (WEBGGUF_GPU_BOUNDS=0); R the device without robust buffer
# access (WEBGGUF_GPU_ROBUST=0; naga leaves buffers unchecked on a device
# with robustBufferAccess2, so nothing then checks them); RB both.
# Also (first, as the shortest): 2026-12-07f's open question, why the
# 8B Q4_K's products read slower after a deep attention. gpu-profile's new
# --touch reads MIB MiB after each layer's attention (untimed) from
# --touch-bufs buffers in turn, at position 0: 32 MiB from 32 buffers is
# what attention reads at 8,192 keys (33.6 MB a layer, 1.07 GB a step);
# from 1 buffer, the same bytes through the L2 with a 32 MiB footprint;
# 256 MiB from 32, a larger footprint. If the products slow with the
# distinct bytes, it is the footprint; with the bytes alone, the L2; with
# neither, attention itself.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
for v in D R D R; do
  e=A=1; [ $v = R ] && e=WEBGGUF_GPU_ROBUST=0
  env $e timeout 60 $W gpu-bandwidth --mib 1024 -r 20 --json > $R/bw-$v-$(date +%s).json 2> $R/bw-$v.err
  log "bandwidth $v rc=$?: $(tail -c 300 $(ls -t $R/bw-$v-*.json | head -1) | tr '\n' ' ')"
done
RB=WEBGGUF_GPU_ROBUST=0,WEBGGUF_GPU_BOUNDS=0
sbs_ab $R/tg.txt "llama-3.1-8b:F16 llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K" \
  D:webgguf RB:webgguf:$RB R:webgguf:WEBGGUF_GPU_ROBUST=0 B:webgguf:WEBGGUF_GPU_BOUNDS=0
log "tg done after $(( $(date +%s) - S )) s"
sbs_prof Q4_K-d8k-t32x32 llama-3.1-8b:Q4_K -d 8192 --touch 32 --touch-bufs 32
sbs_prof Q4_K-t32x1 llama-3.1-8b:Q4_K --touch 32 --touch-bufs 1
sbs_prof Q4_K-t256x32 llama-3.1-8b:Q4_K --touch 256 --touch-bufs 32
sbs_prof Q4_K-t4x32 llama-3.1-8b:Q4_K --touch 4 --touch-bufs 32
sbs_prof Q8_0-d8k-t32x32 llama-3.1-8b:Q8_0 -d 8192 --touch 32 --touch-bufs 32
sbs_prof Q4_K-t32x32-again llama-3.1-8b:Q4_K --touch 32 --touch-bufs 32
for t in IQ4_XS; do
  for v in D RB D RB; do
    e=A=1; [ $v = RB ] && e="WEBGGUF_GPU_ROBUST=0 WEBGGUF_GPU_BOUNDS=0"
    env $e timeout 100 $W bench --synthetic llama-3.1-8b:$t --backend gpu --ctx 8448 -p 1 -n 64 -d 0,2048,8192 -r 3 --json > $R/depth-$t-$v-$(date +%s).json 2>> $R/depth.err
    log "depth $t $v rc=$? after $(( $(date +%s) - S )): $(grep -o '"tg_median_tok_s":[0-9.]*' $(ls -t $R/depth-$t-$v-*.json | head -1) | tr '\n' ' ')"
  done
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
