#!/usr/bin/env bash
# 2026-11-28: IQ4_XS / IQ4_NL wide decoder variants (branch wip/iq4v),
# gpu-profile on synthetic 8B files (every matrix in one type), gate/up =
# 2 x 14,336 x 4,096 weights x 32 layers. main = the decoder before this
# session (byte-pair table, bytes regrouped per row); base = two-half
# table, x permuted once; nofill = base with a trivial table fill (wrong
# values: timing only); cfree = base with lane-chosen table entries (no
# bank conflicts, wrong values); both = nofill + cfree; nolut = no lookup
# at all (nibbles as values); hyb1, hyb2 = 1 or 2 of the 4 quant words
# per wide unit decoded by a bitwise mux tree (no lookups), alu = all 4.
# VARS picks the variants. Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
.dev/webgguf-main bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for round in 1 2; do
for t in IQ4_XS IQ4_NL; do
for v in ${VARS:-main base hyb1 hyb2 alu}; do
  if [ $v = main ]; then M=.dev/webgguf-main; else M=.dev/webgguf-iq4v; fi
  WEBGGUF_IQ4V=$v timeout 120 $M gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/tmp/p.err || { echo "$t $v failed"; tail -3 /tmp/p.err; continue; }
  python3 - $t $v <<'PY'
import json, sys
t, v = sys.argv[1:3]
bpw = dict(IQ4_XS=4.25, IQ4_NL=4.5)[t]
d = json.load(open('/tmp/p.json'))
k = {x['kernel']: x['us'] for x in d['kernels_decode']['by_kernel']}
b = 2 * 14336 * 4096 * 32 * bpw / 8
print('%-7s %-7s gate/up %7.1f us %6.0f GB/s  matvec %7.1f  qkv %6.1f  gpu_pass %7.1f us' % (t, v, k['gate_up'], b / k['gate_up'] / 1e3, k['matvec'], k['qkv'], d['steps']['median_us']['gpu_pass']), flush=True)
PY
done; done; done
