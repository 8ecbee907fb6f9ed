#!/usr/bin/env bash
# 2026-11-28 (second run: BIN, CFGS, SHAPE, TYPES pick the binary, configs,
# shape, formats): matvec shape sweep (rows per workgroup for q/k/v, gate/up,
# plain; threads per workgroup) on the formats that miss 2 TB/s, main
# (3e31d14's library), gpu-profile on synthetic 8B files. 2026-11-26b's and
# 27f's sweeps covered Q4_K, Q4_0, F16 (and Q5_K, Q8_0, Q6_K, Q3_K for
# gate/up's rows) only. Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=.dev/webgguf-${BIN:-main}
$M bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for round in 1 2; do
for t in ${TYPES:-IQ4_XS Q3_K Q2_K}; do
for c in ${CFGS:-def r444 r482 r824 r442 w64 w256 w64r444}; do
  unset WEBGGUF_GPU_MV_ROWS WEBGGUF_GPU_MV_WG
  case $c in
    r*) export WEBGGUF_GPU_MV_ROWS=$(echo ${c#r} | sed 's/\(.\)\(.\)\(.\)/\1,\2,\3/');;
    w64r*) export WEBGGUF_GPU_MV_WG=64 WEBGGUF_GPU_MV_ROWS=$(echo ${c#w64r} | sed "s/\(.\)\(.\)\(.\)/\1,\2,\3/");;
    w*) export WEBGGUF_GPU_MV_WG=${c#w};;
  esac
  timeout 120 $M gpu-profile --synthetic ${SHAPE:-llama-3.1-8b}:$t -n 4 > /tmp/p.json 2>/tmp/p.err || { echo "$t $c failed"; tail -2 /tmp/p.err; continue; }
  python3 - $t $c <<'PY'
import json, sys
t, c = sys.argv[1:3]
bpw = dict(IQ4_XS=4.25, IQ4_NL=4.5, Q2_K=2.625, Q3_K=3.4375, Q4_K=4.5, Q5_K=5.5, Q6_K=6.5625, Q8_0=8.5, Q4_0=4.5, Q5_0=5.5)[t]
d = json.load(open('/tmp/p.json'))
k = {x['kernel']: x['us'] for x in d['kernels_decode']['by_kernel']}
b = 2 * 14336 * 4096 * 32 * bpw / 8
print('%-7s %-8s gate/up %7.1f us %6.0f GB/s  matvec %7.1f  qkv %6.1f  gpu_pass %7.1f us' % (t, c, k['gate_up'], b / k['gate_up'] / 1e3, k['matvec'], k['qkv'], d['steps']['median_us']['gpu_pass']), flush=True)
PY
done; done; done
