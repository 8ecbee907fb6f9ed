#!/usr/bin/env bash
# Second device call (2026-11-26g). ab1: neither the IQ4 code book by
# nibble nor the F16 vec4 loads gained. main = 1bffe89; fill = main with
# IQ4_XS's per-workgroup code-book fill by scalar selects (one value per
# nibble instead of iq4_bytes' four); nozero = main with wgpu's zero
# initialisation of workgroup memory off (PipelineCompilationOptions).
# Kernel tests of nozero on the H100, then decode on synthetic files, and
# main's rows and threads per workgroup on the 8B IQ4_XS
# (WEBGGUF_GPU_MV_ROWS=Q,G,M, WEBGGUF_GPU_MV_WG).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
echo "== tests-nozero gpu::"; .dev/tests-nozero --test-threads 1 gpu:: 2>&1 | grep -E "test result|FAIL|panicked|NVVM"
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1 m=$2; echo "== $b $m ${3:-}"; env ${3:-X=1} timeout 100 .dev/webgguf-$b bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS; do for b in main fill nozero; do r $b $m; done; done
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K llama-3.1-8b:F16; do for b in main nozero; do r $b $m; done; done
  echo "after $(( $(date +%s) - S )) s"
done
for v in WEBGGUF_GPU_MV_ROWS=8,8,4 WEBGGUF_GPU_MV_ROWS=4,8,2 WEBGGUF_GPU_MV_ROWS=8,16,4 WEBGGUF_GPU_MV_WG=64; do r main llama-3.1-8b:IQ4_XS $v; done
r main llama-3.1-8b:Q4_K WEBGGUF_GPU_MV_ROWS=8,8,4
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
a={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}
print(' '.join('%s %.0f us' % (n, a.get(n,0)) for n in ['quantize_x','qkv','attention','gate_up','matvec','lm_head']), 'sum %.0f us' % d['kernels_decode']['sum_of_kernels_us'], 'gpu_pass %.0f us' % d['steps']['median_us']['gpu_pass'])" "$1" 2>&1 | tail -1; }
for b in main nozero fill; do timeout 100 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 > $OUT/prof-$b.json 2>/tmp/err.txt; echo "profile $b 8B IQ4_XS: $(k $OUT/prof-$b.json) $(tail -c 200 /tmp/err.txt)"; done
echo "done after $(( $(date +%s) - S )) s"
