#!/usr/bin/env bash
# 2026-11-27f: the matvec's rows per workgroup and threads for the formats
# 2026-11-26b's sweep left out (Q6_K, Q3_K; Q4_K as the reference), main
# e638764, one binary: WEBGGUF_GPU_MV_ROWS=Q,G,M (q/k/v, gate/up, plain;
# default 4,4,2) and WEBGGUF_GPU_MV_WG (default 128 at 4096 columns).
# Synthetic 8B files (every matrix in one type); gpu-profile's decode
# kernels, then tg128, each variant in turn, two rounds. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/webgguf bench --backend gpu --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
for t in Q6_K Q3_K Q4_K; do
  for v in "A=1" "WEBGGUF_GPU_MV_ROWS=8,8,4" "WEBGGUF_GPU_MV_ROWS=4,2,2" "WEBGGUF_GPU_MV_WG=64" "WEBGGUF_GPU_MV_WG=64 WEBGGUF_GPU_MV_ROWS=8,8,4"; do
    tg=$(env $v timeout 100 .dev/webgguf bench --backend gpu --synthetic llama-3.1-8b:$t -p 1 -n 128 -r 3 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f5)
    if [ $rd = 1 ]; then
      env $v timeout 100 .dev/webgguf gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
      pr=$(python3 -c "
import json
d = json.load(open('/tmp/p.json'))['kernels_decode']['by_kernel']
print(' '.join('%s=%.0f' % (k['kernel'], k['us']) for k in d if k['kernel'] in ('gate_up', 'matvec', 'qkv', 'lm_head')))
" 2>&1 | tail -1)
    else pr=""; fi
    echo "== $t $v: tg128 $tg $pr"
  done
done
echo "round $rd after $(( $(date +%s) - S )) s"
done
