#!/usr/bin/env bash
# 2026-11-27f: gate/up with 2 rows a workgroup (WEBGGUF_GPU_MV_ROWS=4,2,2)
# against the default 4 (shape.log showed the 8B Q4_K gate/up 8% faster in
# one profile), main e638764, one binary; synthetic files, tg128
# interleaved, three rounds, then gate/up in gpu-profile. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0; do .dev/webgguf bench --backend gpu --synthetic $m -p 1 -n 128 -r 3 > /dev/null 2>&1; done   # untimed warm-up (clocks)
M="llama-3.1-8b:Q4_K llama-3.1-8b:Q5_K llama-3.1-8b:Q4_0 llama-3.1-8b:Q8_0 llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0"
for rd in 1 2 3; do
  for m in $M; do
    for v in "A=1" "WEBGGUF_GPU_MV_ROWS=4,2,2"; do
      echo "== $m $v: $(env $v timeout 100 .dev/webgguf bench --backend gpu --synthetic $m -p 1 -n 128 -r 3 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f5)"
    done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K; do
  for v in "A=1" "WEBGGUF_GPU_MV_ROWS=4,2,2"; do
    env $v timeout 100 .dev/webgguf gpu-profile --synthetic $m -n 4 > /tmp/p.json 2>/dev/null
    echo "profile $m $v: $(python3 -c "
import json
d = json.load(open('/tmp/p.json'))['kernels_decode']['by_kernel']
print(' '.join('%s=%.0f' % (k['kernel'], k['us']) for k in d if k['kernel'] in ('gate_up', 'matvec', 'qkv')))
" 2>&1 | tail -1)"
  done
done
echo "done after $(( $(date +%s) - S )) s"
