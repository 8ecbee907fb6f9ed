#!/usr/bin/env bash
# Third device call (2026-11-26f). v4 = matmul_coop.wgsl staging as
# vec4<f16> quads (one conversion of four values and one 8-byte store per
# quad) instead of ab2's vec2<f16> pairs (new); main = 571b057. Kernel
# tests of the tiled products with v4; pp512 on synthetic files by binary
# and tile shape (rows x tokens x threads; "rule" = picked by rows).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
echo "== tests-v4"; .dev/tests-v4 --test-threads 1 matmul tiled 2>&1 | grep -E "result|FAIL|panicked|NVVM"
pp() { local b=$1 c=$2 m=$3; echo "== $b coop=$c $m after $(( $(date +%s) - S )) s"; WEBGGUF_GPU_COOP=$c timeout 120 .dev/webgguf-$b bench --synthetic $m -p 512 -n 1 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for b in main new v4; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for c in 128x128x128 128x128x256 128x64x256 64x64x256 128x64x128 64x64x128 256x128x256; do pp v4 $c $m; done
done
for m in tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0; do
  for c in rule 128x128x256 128x64x256 64x64x256 128x128x128 128x64x128 64x64x128; do pp v4 $c $m; done
  pp new rule $m
done
for c in rule 128x128x128; do pp v4 $c llama-3.1-8b:Q8_0; pp v4 $c llama-3.1-8b:Q6_K; done
pp new rule llama-3.1-8b:Q8_0
for b in main new v4; do pp $b rule llama-3.1-8b:Q4_K; pp $b rule llama-3.2-1b:Q4_K; done
echo "done after $(( $(date +%s) - S )) s"
