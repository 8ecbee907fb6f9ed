#!/usr/bin/env bash
# 2026-11-27g: per-family decode bandwidth after the loop-counter change
# (main 3e31d14), gpu-profile on synthetic 8B files (every matrix in one
# type), one token; gate/up = 2 x 14,336 x 4,096 weights x 32 layers.
# Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=.dev/webgguf-main
$M bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for t in Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS IQ4_NL Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 F16 BF16; do
  timeout 120 $M gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
  python3 - $t <<'PY'
import json, sys
t = sys.argv[1]
bpw = dict(Q2_K=2.625, Q3_K=3.4375, Q4_K=4.5, Q5_K=5.5, Q6_K=6.5625, IQ4_XS=4.25, IQ4_NL=4.5, Q4_0=4.5, Q4_1=5.0, Q5_0=5.5, Q5_1=6.0, Q8_0=8.5, F16=16, BF16=16)[t]
d = json.load(open('/tmp/p.json'))
k = {x['kernel']: x['us'] for x in d['kernels_decode']['by_kernel']}
b = 2 * 14336 * 4096 * 32 * bpw / 8
print('%-7s gate/up %7.1f us  %6.0f GB/s   matvec %7.1f  qkv %6.1f  step gpu_pass %7.1f us' % (t, k['gate_up'], b / k['gate_up'] / 1e3, k['matvec'], k['qkv'], d['steps']['median_us']['gpu_pass']))
PY
done
