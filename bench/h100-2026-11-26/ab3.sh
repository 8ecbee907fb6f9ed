#!/usr/bin/env bash
# Third device call (2026-11-26): attention.wgsl's `split` back (base's
# kernel and merge) with split.wgsl kept for head size >= 128 from
# GpuTuning::deep_split_keys keys (WEBGGUF_GPU_DEEP_KEYS; 0 = never).
# base = 3bca6ed, prev = d7d0b23 (split.wgsl everywhere), new = this.
# The threshold sweep (0 = never, 1 = from SPLIT_KEYS keys on) picks
# deep_split_keys. .dev carried as in ab2.sh.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
r() { local b=$1; shift; echo "== $b $*"; timeout 120 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | tr -s ' '; }
.dev/webgguf-new bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
echo "## depth 0 (context 4096), tg128, two rounds"
for rd in 1 2; do for m in smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do for b in base prev new; do
  r $b --synthetic $m -p 1 -n 128 -r 3 | grep tg128
done; done; done
echo "## depth 2048 and 8192, tg128"
for m in llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do for d in 2048 8192; do for b in base new; do
  r $b --synthetic $m --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d | grep tg128
done; done; done
echo "## 8B: new with split.wgsl from K keys (0 = never), depths 256 .. 8192"
for d in 256 512 1024 2048 8192; do for K in 0 1; do
  echo "-- deep_split_keys $K"; WEBGGUF_GPU_DEEP_KEYS=$K r new --synthetic llama-3.1-8b:Q4_K --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d | grep tg128
done; done
echo "## 8B default new vs prev at 2048, 8192"
for d in 2048 8192; do for b in prev new; do
  r $b --synthetic llama-3.1-8b:Q4_K --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d | grep tg128
done; done
echo "done after $(( $(date +%s) - S )) s"
