#!/usr/bin/env bash
# First device call (2026-11-27d): the tensor-core prefill tile staged
# through two shared-memory buffers (one barrier a step) against one (two
# barriers), and what its step waits on, by elimination (WEBGGUF_XP, read
# by the experiment binary only, ab1-ab2-exp.patch, which also holds the two-stage staging; wrong outputs, timing
# only): nodeq = each weight unit from one raw word instead of its format's
# decoder, nox = x from a constant instead of its loads, nomma = no
# tensor-core products.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu::tests::matmul 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
prof() { local m=$1; shift; env "$@" timeout 150 .dev/webgguf-xp gpu-profile --synthetic $m -n 2 > /tmp/p.json 2>/tmp/p.err
  python3 -c "
import json,sys
d=json.load(open('/tmp/p.json'))['kernels_prefill']
print('profile $m $*:', ' '.join('%s=%.0f'%(k['kernel'],k['us']) for k in d['by_kernel'] if k['us']>300), 'sum=%.0f'%d['sum_of_kernels_us'])
" 2>&1 || tail -3 /tmp/p.err; }
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for v in "WEBGGUF_GPU_COOP_STAGES=1" "WEBGGUF_GPU_COOP_STAGES=2" "WEBGGUF_GPU_COOP_STAGES=1 WEBGGUF_XP=nodeq" "WEBGGUF_GPU_COOP_STAGES=1 WEBGGUF_XP=nox" "WEBGGUF_GPU_COOP_STAGES=1 WEBGGUF_XP=nomma" "WEBGGUF_GPU_COOP_STAGES=1 WEBGGUF_XP=nodeq,nox" "WEBGGUF_GPU_COOP_STAGES=2 WEBGGUF_XP=nodeq,nox"; do
    prof $m $v
  done
  echo "profiles $m after $(( $(date +%s) - S )) s"
done
r() { local m=$1; shift; echo "== $m $*"; env "$@" timeout 120 .dev/webgguf-xp bench --backend gpu --synthetic $m -p 512 -n 4 -r 3 2>&1 | grep -E "pp512|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    r $m WEBGGUF_GPU_COOP_STAGES=1
    r $m WEBGGUF_GPU_COOP_STAGES=2
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
