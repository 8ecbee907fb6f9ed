#!/usr/bin/env bash
# Fourth device call (2026-11-27d), on an H100: the 256-token tile for
# batches of more than LONG_BATCH = 384 tokens (Tile::coop_long), new =
# the working tree, its path off with WEBGGUF_GPU_COOP_LONG=0. The coop
# kernel tests first; gpu-profile's prefill table on the 8B; then pp512
# and pp400 (long tiles) and pp384 (both paths take the 128-token tiles),
# two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu::tests::matmul_coop gpu::tests::long_batches 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
prof() { local m=$1; shift; env "$@" timeout 150 .dev/webgguf-new gpu-profile --synthetic $m -n 2 > /tmp/p.json 2>/tmp/p.err
  python3 -c "
import json,sys
d=json.load(open('/tmp/p.json'))['kernels_prefill']
print('profile $m $*:', ' '.join('%s=%.0f'%(k['kernel'],k['us']) for k in d['by_kernel'] if k['us']>300), 'sum=%.0f'%d['sum_of_kernels_us'])
" 2>&1 || tail -3 /tmp/p.err; }
for m in llama-3.1-8b:Q4_K; do
  prof $m WEBGGUF_GPU_COOP_LONG=0
  prof $m A=1
done
r() { local m=$1 p=$2; shift 2; echo "== $m p$p $*"; env "$@" timeout 120 .dev/webgguf-new bench --backend gpu --synthetic $m -p $p -n 4 -r 3 2>&1 | grep -E "pp$p|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:Q8_0 llama-3.1-8b:IQ4_XS llama-3.1-8b:Q6_K llama-3.1-8b:Q4_0 llama-3.1-8b:Q5_K llama-3.2-1b:Q4_K; do
    for p in 512 400; do
      r $m $p WEBGGUF_GPU_COOP_LONG=0
      r $m $p A=1
    done
  done
  for m in llama-3.1-8b:Q4_K; do
    r $m 384 WEBGGUF_GPU_COOP_LONG=0
    r $m 384 A=1
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
