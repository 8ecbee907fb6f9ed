#!/usr/bin/env bash
# Sixth device call (2026-11-26f), carry ['.sbs'] (its webgguf: 3de7843).
# The side-by-side run's 1B pp512 figures were bimodal (12-13k for Q4_K_M,
# Q5_K_M, IQ4_XS, F16; 28-31k for Q6_K, Q4_0, Q8_0) while the 1B Q4_K_M's
# own gpu-profile summed 18.7 ms of prefill kernels (27k tok/s). The kit's
# 1B F16 file again: bench five times in a row (is it the first runs after
# an idle GPU?), with -r 10, and its prefill profile.
set -u
for f in .sbs/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
gunzip -kf .sbs/webgguf.gz && chmod +x .sbs/webgguf
export PYTHONPATH=.sbs/llama/gguf-py
python3 .sbs/mkmodel.py llama-3.2-1b /tmp/1b-F16.gguf > /dev/null 2>&1; ls -la /tmp/1b-F16.gguf
for i in 1 2 3 4 5; do .sbs/webgguf bench -m /tmp/1b-F16.gguf --backend gpu -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128" | tr -s ' '; done
.sbs/webgguf bench -m /tmp/1b-F16.gguf --backend gpu -p 512 -n 16 -r 10 2>&1 | grep -E "pp512" | tr -s ' '
.sbs/webgguf gpu-profile -m /tmp/1b-F16.gguf -n 8 > $OUT/prof-1b-f16.json 2>/dev/null
python3 -c "
import json; d=json.load(open('$OUT/prof-1b-f16.json'))['kernels_prefill']
print('prefill sum %.0f us' % d['sum_of_kernels_us'], ' '.join('%s %.0f' % (k['kernel'], k['us']) for k in sorted(d['by_kernel'], key=lambda k: -k['us'])[:6]))"
for i in 1 2; do .sbs/webgguf bench --synthetic llama-3.2-1b:F16 -p 512 -n 16 -r 3 2>&1 | grep -E "pp512" | tr -s ' '; done
