#!/usr/bin/env bash
# Fourth device call (2026-11-27). Float-weight (F16) decode with x
# normalised by a separate rmsnorm pass before q/k/v and gate/up
# (WEBGGUF_EXP_PRENORM, read by the graph builder in this binary only),
# instead of every matvec workgroup reading the norm gains beside x and
# folding the norm: each workgroup then reads 16 KB of L2 less per 32 KB
# of weights (q/k/v, 4 rows of 4096 F16). tg128 two rounds; decode
# profiles of the 8B F16 both ways.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local e=$1 m=$2; echo "== pre=$e $m"; if [ $e = 1 ]; then export WEBGGUF_EXP_PRENORM=1; else unset WEBGGUF_EXP_PRENORM; fi; timeout 100 .dev/webgguf-new bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-new bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.2-1b:F16 tinyllama-1.1b:F16 smollm2-135m:F16 llama-3.1-8b:BF16; do for e in 0 1; do r $e $m; done; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
unset WEBGGUF_EXP_PRENORM
timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:F16 -n 32 > ${OUT:-/tmp}/ab4-profile-8b-f16-main.json 2>&1; echo "profile main rc=$?"
WEBGGUF_EXP_PRENORM=1 timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:F16 -n 32 > ${OUT:-/tmp}/ab4-profile-8b-f16-pre.json 2>&1; echo "profile pre rc=$?"
echo "done after $(( $(date +%s) - S )) s"
