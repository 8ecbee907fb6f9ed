#!/usr/bin/env bash
# Eighth device call (2026-11-27), on an H100 (the others came on H200s):
# ab6's A/B of the rmsnorm change again, main (98c38ac) against new
# (6b67000), pp512 / tg128 two rounds, on the shapes it moves.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name --format=csv,noheader
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in gemma3-270m:Q8_0 gemma3-270m:F16 llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0; do for b in wg new; do r $b $m; done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
