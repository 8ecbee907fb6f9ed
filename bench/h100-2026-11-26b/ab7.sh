#!/usr/bin/env bash
# Runs in go.sh's call (2026-11-26b) while llama.cpp's CUDA build (nice 19)
# is the only other load: decode split lengths by key count
# (GpuTuning::split_wgs, default 512) against 64-key splits always
# (WEBGGUF_GPU_SPLIT_WGS=0, as before), synthetic shapes, the kit's
# binary (.sbs/webgguf, this commit). tg32 after d keys, tg128 from 0.
set -u
B=/tmp/sbs/webgguf
r() { echo "== $*"; timeout 150 $B bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
$B bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q4_0; do
  for sw in 512 0; do
    WEBGGUF_GPU_SPLIT_WGS=$sw r --synthetic $m --ctx 4352 -p 1 -n 32 -r 3 -d 0,64,128,256,512,1024,2048,4096
  done
  for rd in 1 2; do for sw in 512 0; do
    WEBGGUF_GPU_SPLIT_WGS=$sw r --synthetic $m -p 1 -n 128 -r 3
  done; done
  echo "t=$(( $(date +%s) - START ))"
done
echo "ab7 done after $(( $(date +%s) - START )) s"
