#!/usr/bin/env bash
# First device call (2026-11-26c): the staged tensor-core prefill
# (coop_stage.wgsl, then matmul_coop.wgsl's staged product) against the
# tile loop's decode (WEBGGUF_GPU_COOP_STAGED=0), one binary. Kernel test
# on the H100 first, then pp512 on synthetic files, two rounds, tile
# shapes for the staged product, and prefill profiles.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 matmul_coop 2>&1 | tail -5
r() { echo "== $*"; env "$@" 2>&1 | grep -E "^\| synthetic" | grep pp | tr -s ' '; }
B=.dev/webgguf-main
$B bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0; do
    for st in 0 1; do
      r WEBGGUF_GPU_COOP_STAGED=$st $B bench --synthetic $m -p 512 -n 1 -r 3
    done
  done
done
echo "-- shapes, staged, 8B Q4_K and 1B Q4_K"
for sh in 64x64 128x64 128x128 256x64 256x128; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
    r WEBGGUF_GPU_COOP=$sh $B bench --synthetic $m -p 512 -n 1 -r 3
  done
done
for st in 0 1; do
  WEBGGUF_GPU_COOP_STAGED=$st $B gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 > $OUT/prof-8b-staged$st.json 2>/dev/null; echo "profile $st rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
