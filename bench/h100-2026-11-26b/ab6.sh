#!/usr/bin/env bash
# Second device call (2026-11-26b): shorter splits for attention.wgsl's
# `split` (GpuTuning::split_len via WEBGGUF_GPU_SPLIT_LEN, rounded up to
# the kernel's chunk: 16 keys at head size 128, 32 at 64; 64 = before).
# ab5 showed decode at 64-1024 keys flat but 7-13% under depth 0, with
# each split's workgroup walking 2-4 chunks in turn. tg32 after d keys
# (context 1280), and tg128 from 0 at context 1280 and 4096 (the split
# dispatch covers the context: more splits, more idle workgroups).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
B=.dev/webgguf-main
r() { echo "== $*"; timeout 150 $B bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
$B bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q4_0; do
  for L in 64 32 16; do
    WEBGGUF_GPU_SPLIT_LEN=$L r --synthetic $m --ctx 1280 -p 1 -n 32 -r 3 -d 0,64,128,256,512,1024
  done
  for rd in 1 2; do for L in 64 32 16; do for ctx in 1280 4096; do
    WEBGGUF_GPU_SPLIT_LEN=$L r --synthetic $m --ctx $ctx -p 1 -n 128 -r 3
  done; done; done
  echo "t=$(( $(date +%s) - S ))"
done
for L in 64 16; do
  WEBGGUF_GPU_SPLIT_LEN=$L $B gpu-profile --synthetic llama-3.1-8b:Q4_K -n 32 -d 100 > $OUT/prof-8b-d100-L$L.json 2>/dev/null; echo "profile L$L rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
