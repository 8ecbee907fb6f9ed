#!/usr/bin/env bash
# Fifth device call (2026-11-26c): split.wgsl's query heads per workgroup
# (kernels::split_heads) capped at 2 (gq2) and 1 (gq1) instead of the
# whole group (4 on the 8B), base = cab5e44. split.wgsl runs on the 8B
# from 2048 keys; synthetic 8B Q4_K, tg32 after d keys, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-base bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base gq2 gq1; do
  r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
done; done
echo "done after $(( $(date +%s) - S )) s"
