#!/usr/bin/env bash
# Second device call (2026-11-27). Wide units per iteration of the wide
# integer matvec (WEBGGUF_GPU_WIDE_UNROLL, one binary: 1 is main's loop):
# 1, 2, 3, and 2 with 64 threads a workgroup for every product
# (WEBGGUF_GPU_MV_WG=64; at 4096 columns 128 threads have one wide unit
# each, so unrolling changes nothing there). Synthetic files, tg128, two
# rounds on the 8B files, one on the 1B.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local u=$1 wg=$2 m=$3; echo "== u$u wg$wg $m"; WEBGGUF_GPU_WIDE_UNROLL=$u WEBGGUF_GPU_MV_WG=$wg timeout 100 .dev/webgguf-new bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-new bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  ms="llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.1-8b:Q8_0"
  [ $rd = 1 ] && ms="$ms llama-3.2-1b:Q4_K llama-3.2-1b:IQ4_XS"
  for m in $ms; do for s in "1 0" "2 0" "3 0" "2 64"; do r $s $m; done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
