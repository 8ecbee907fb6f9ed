#!/usr/bin/env bash
# Fourth device call (2026-11-26b): attention.wgsl's splits longer than 64
# keys at depth (GpuTuning::split_max via WEBGGUF_GPU_SPLIT_MAX: past
# split_wgs busy workgroups the splits double up to it; 64 = before), and
# on the 8B against split.wgsl (WEBGGUF_GPU_DEEP_KEYS=0: attention.wgsl's
# splits at every depth). Synthetic shapes, tg32 after d keys.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
B=.dev/webgguf-main
r() { echo "== $*"; timeout 200 $B bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
$B bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for m in llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q4_0 llama-3.1-8b:Q4_K; do
  for mx in 64 256 1024; do
    WEBGGUF_GPU_SPLIT_MAX=$mx r --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d 1024,2048,4096,8192
  done
  case $m in llama-3.1*) for mx in 64 256 1024; do
    WEBGGUF_GPU_DEEP_KEYS=0 WEBGGUF_GPU_SPLIT_MAX=$mx r --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d 2048,4096,8192
  done;; esac
  echo "t=$(( $(date +%s) - S ))"
done
for mx in 64 256; do
  WEBGGUF_GPU_SPLIT_MAX=$mx $B gpu-profile --synthetic llama-3.2-1b:Q4_K -n 16 -d 8192 > $OUT/prof-1b-d8192-max$mx.json 2>/dev/null; echo "profile $mx rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
