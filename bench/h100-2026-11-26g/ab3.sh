#!/usr/bin/env bash
# Third device call (2026-11-26g). ab2: 64 threads a matvec workgroup
# (WEBGGUF_GPU_MV_WG=64) ran the synthetic 8B IQ4_XS at 238.7 tg128
# against 229.9-231.2 (one sample); 8 rows for q/k/v and gate/up at 236.0.
# Three rounds of those on the 8B IQ4_XS, two on the 1B (whose products
# of 2048 columns already take 64 threads; only its down product of 8192
# changes), and the 8B Q4_K for comparison. Binary: main = 1bffe89.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m ${3:-} ${4:-}"; env ${3:-X=1} ${4:-Y=1} timeout 100 .dev/webgguf-$b bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2 3; do
  r main llama-3.1-8b:IQ4_XS
  r main llama-3.1-8b:IQ4_XS WEBGGUF_GPU_MV_WG=64
  r main llama-3.1-8b:IQ4_XS WEBGGUF_GPU_MV_WG=64 WEBGGUF_GPU_MV_ROWS=8,8,4
  r main llama-3.1-8b:IQ4_XS WEBGGUF_GPU_MV_ROWS=8,8,4
  echo "after $(( $(date +%s) - S )) s"
done
for rd in 1 2; do
  r main llama-3.2-1b:IQ4_XS
  r main llama-3.2-1b:IQ4_XS WEBGGUF_GPU_MV_WG=64
  r main llama-3.1-8b:Q4_K
  r main llama-3.1-8b:Q4_K WEBGGUF_GPU_MV_WG=64
done
echo "done after $(( $(date +%s) - S )) s"
