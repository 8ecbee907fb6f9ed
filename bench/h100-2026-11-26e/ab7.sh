#!/usr/bin/env bash
# Seventh device call (2026-11-26e), binary 8681d20, measurement only:
# split.wgsl's and the merge's time by shape at 8192 keys (does a thread's
# share of a key row, PW words, set the skeleton's cost?); and q/k/v's time
# on the synthetic 8B F16 by rows a workgroup and threads (why the small
# products read ~1.5 TB/s).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
for key in sys.argv[2:]:
  part,kern=key.split(':')
  a={x['kernel']:x['us'] for x in d[part]['by_kernel']}
  print('%s %.1f us/layer' % (kern, a.get(kern,0)/32), end='; ')
print()" "$@"; }
.dev/webgguf-main bench --synthetic llama-3.1-8b:Q4_K -p 64 -n 64 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for sh in 64x4 32x4 32x8 16x16 128x2; do
  WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 120 .dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > /tmp/p.json 2>/dev/null
  echo "shape $sh: $(k /tmp/p.json kernels_decode_at_depth:attention kernels_decode_at_depth:attention_merge)"
done; done
for cfg in "4,0,0 128" "8,0,0 128" "16,0,0 128" "4,0,0 256" "8,0,0 64" "4,0,0 64"; do
  set -- $cfg
  WEBGGUF_GPU_MV_ROWS=$1 WEBGGUF_GPU_MV_WG=$2 timeout 200 .dev/webgguf-main gpu-profile --synthetic llama-3.1-8b:F16 -n 8 > $OUT/prof-f16-$1-$2.json 2>/dev/null
  echo "F16 rows $1 threads $2: $(k $OUT/prof-f16-$1-$2.json kernels_decode:qkv kernels_decode:matvec kernels_decode:gate_up)"
done
echo "done after $(( $(date +%s) - S )) s"
