#!/usr/bin/env bash
# Second device call (2026-11-26): decode at depth 0, 2048 and 8192 for
# three binaries in one run, interleaved: base = 3bca6ed (before
# split.wgsl), prev = d7d0b23 (split.wgsl as first measured, ab.log), new
# = split.wgsl loading V with K, and the merge with 16 loads in flight.
# From the repository root with .dev carried (the three stripped CLIs and
# the Vulkan loader debs in .dev/gl); per-kernel depth profiles go to $OUT.
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
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K tinyllama-1.1b:Q4_0; do for d in 2048 8192; do for b in base prev new; do
  r $b --synthetic $m --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d | grep tg128
done; done; done
echo "## profiles at depth 8192"
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do for b in base new; do
  n=$(echo $m | tr ':.' '--'); timeout 150 .dev/webgguf-$b gpu-profile --synthetic $m -d 8192 -n 16 > $OUT/prof-$n-d8192-$b.json 2>/dev/null; echo "profile $m $b rc=$?"
done; done
echo "done after $(( $(date +%s) - S )) s"
