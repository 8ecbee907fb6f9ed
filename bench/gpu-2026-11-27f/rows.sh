#!/usr/bin/env bash
# 2026-11-27f: after gate/up's 2 rows (19b445e), the plain products' rows
# (default 2) and q/k/v's (default 4): WEBGGUF_GPU_MV_ROWS=Q,G,M with G at
# its new default 2; synthetic files, tg128, each variant in turn, two
# rounds, after an untimed warm-up. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0; do .dev/webgguf bench --backend gpu --synthetic $m -p 1 -n 128 -r 3 > /dev/null 2>&1; done
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
    for v in "A=1" "WEBGGUF_GPU_MV_ROWS=4,2,1" "WEBGGUF_GPU_MV_ROWS=4,2,4" "WEBGGUF_GPU_MV_ROWS=8,2,2"; do
      echo "== $m $v: $(env $v timeout 100 .dev/webgguf bench --backend gpu --synthetic $m -p 1 -n 128 -r 3 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f5)"
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
