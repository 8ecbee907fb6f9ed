#!/usr/bin/env bash
# Fifth device call (2026-11-27d), on an H100: the tensor-core tile's x in
# f16 (pack_f16.wgsl before each such product; one 16-byte load a group of
# 8 instead of two and the conversion), new = the working tree, base =
# c349bd5 (ab4's binary). Every gpu:: test of new first; gpu-profile's
# prefill table on the 8B and 1B; pp512 two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
prof() { local b=$1 m=$2; shift 2; env "$@" timeout 150 .dev/webgguf-$b gpu-profile --synthetic $m -n 2 > /tmp/p.json 2>/tmp/p.err
  python3 -c "
import json,sys
d=json.load(open('/tmp/p.json'))['kernels_prefill']
print('profile $b $m:', ' '.join('%s=%.0f'%(k['kernel'],k['us']) for k in d['by_kernel'] if k['us']>200), 'sum=%.0f'%d['sum_of_kernels_us'])
" 2>&1 || tail -3 /tmp/p.err; }
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  prof base $m
  prof new $m
done
r() { local b=$1 m=$2; echo "== $b $m"; timeout 120 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 512 -n 4 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:IQ4_XS llama-3.1-8b:Q6_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    r base $m
    r new $m
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
