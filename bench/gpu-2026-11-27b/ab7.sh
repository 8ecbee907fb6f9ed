#!/usr/bin/env bash
# Seventh device call (2026-11-27b): few.wgsl's replay, variants of e613703
# by WEBGGUF_EXP (read by its generator in that binary only,
# ab7-exp.patch): ring4 / ring16 (V words read 4 or 16 keys ahead instead
# of 8), rbr (the rescale by a branch on r != 1, uniform in practice,
# instead of a select that waits on the rounding of acc * r). Same values
# (few_attention_matches_cpu passes with each). tg128, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
r() { local m=$1; shift; echo "== $m $*"; env "$@" timeout 100 .dev/webgguf-exp bench --backend gpu --synthetic $m -p 16 -n 128 -r 3 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-exp bench --synthetic llama-3.2-1b:Q4_K -p 16 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    for v in A=1 WEBGGUF_EXP=ring4 WEBGGUF_EXP=ring16 WEBGGUF_EXP=rbr WEBGGUF_EXP=rbr,ring16; do r $m $v; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
