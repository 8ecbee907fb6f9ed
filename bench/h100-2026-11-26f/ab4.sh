#!/usr/bin/env bash
# Fourth device call (2026-11-26f). v4 = ab3's vec4<f16> staging, with the
# prefill products labelled by kind (matmul_qkv, matmul_gate_up, matmul:
# wo and down). Which tile shape suits which product: gpu-profile's
# prefill table (512 tokens) for each shape forced on every product,
# synthetic 8B Q4_K, 1B Q4_K and TinyLlama Q4_0, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_prefill']
a={x['kernel']:x['us'] for x in d['by_kernel']}
print(' '.join('%s %.0f' % (n, a.get(n,0)) for n in ['matmul_qkv','matmul_gate_up','matmul']), 'sum %.0f us' % d['sum_of_kernels_us'])" "$1" 2>&1 | tail -1; }
.dev/webgguf-v4 bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
  for c in rule 128x128x128 128x128x256 128x64x256 64x64x256 128x64x128 64x64x128 256x128x256; do
    WEBGGUF_GPU_COOP=$c timeout 100 .dev/webgguf-v4 gpu-profile --synthetic $m -n 4 > /tmp/p.json 2>/dev/null
    echo "$m $c: $(k /tmp/p.json)"
  done
done; echo "after $(( $(date +%s) - S )) s"; done
