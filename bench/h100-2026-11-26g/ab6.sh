#!/usr/bin/env bash
# Sixth device call (2026-11-26g). 64 threads a matvec workgroup helped
# the code-book formats (ab3, ab4); does it help the other 8B files under
# or near 0.9x (Q8_0, F16, Q4_0) or Q6_K? WEBGGUF_GPU_MV_WG=64 against the
# default, two rounds, tg128 on synthetic files. Binary: wg = b4b38d0.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m ${3:-}"; env ${3:-X=1} timeout 100 .dev/webgguf-$b bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-wg bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q8_0 llama-3.1-8b:F16 llama-3.1-8b:Q4_0 llama-3.1-8b:Q6_K llama-3.2-1b:F16; do
    r wg $m; r wg $m WEBGGUF_GPU_MV_WG=64
  done
  echo "after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
