#!/usr/bin/env bash
# Fifth device call (2026-11-26b): split.wgsl reading its K rows as
# 16-byte words (4 loads a thread, not 16) at head size 128, new =
# .dev/webgguf-main, base = .dev/webgguf-base (a1a356e). split.wgsl runs
# on the 8B from 2048 keys; synthetic 8B Q4_K, tg32 after d keys, two
# rounds, and profiles at d8192.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base main; do
  r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,4096,8192
done; done
for b in base main; do
  .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 16 -d 8192 > $OUT/prof-8b-d8192-$b.json 2>/dev/null; echo "profile $b rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
