#!/usr/bin/env bash
# Fourth device call (2026-11-26g). wg = main (1bffe89) with 64 threads a
# matvec workgroup for the code-book formats (IQ4_XS, IQ4_NL) below 8192
# columns (Kernels::matvec; ab3's WEBGGUF_GPU_MV_WG=64 for those products
# only). Three rounds on the synthetic 8B IQ4_XS, two on the 1B, and the
# 8B Q4_K as a control (unchanged kernels).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1 m=$2; echo "== $b $m"; timeout 100 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2 3; do for b in main wg; do r $b llama-3.1-8b:IQ4_XS; done; done
for rd in 1 2; do for b in main wg; do r $b llama-3.2-1b:IQ4_XS; r $b llama-3.1-8b:Q4_K; done; done
echo "done after $(( $(date +%s) - S )) s"
