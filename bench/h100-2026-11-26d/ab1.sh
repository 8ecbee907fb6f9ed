#!/usr/bin/env bash
# First device call (2026-11-26d). main = .dev/webgguf-main (split.wgsl's
# shape from GpuTuning::deep_shape, WEBGGUF_GPU_DEEP_SHAPE=LxT: L keys a
# split, T threads a key), base = .dev/webgguf-base (f794b72). noV / noK:
# main's split.wgsl without its V loads / K loads (timing only; wrong
# outputs). Kernel tests first; then profiles at d8192 on the synthetic 8B
# Q4_K by shape and variant; then tg32 at d2048 and d8192, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
.dev/tests-lib --test-threads 1 split_attention 2>&1 | grep -E "^test |result"
M="--synthetic llama-3.1-8b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
prof() { local b=$1 sh=$2; WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 120 .dev/webgguf-$b gpu-profile $M -n 8 -d 8192 > $OUT/prof-$b-$sh.json 2>/dev/null; echo "profile $b $sh rc=$? $(att $OUT/prof-$b-$sh.json)"; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
prof base 64x4
for sh in 64x4 32x4 32x8 16x8 16x4 128x2 16x16 64x2 8x8 32x2; do prof main $sh; done
prof noV 64x4
prof noK 64x4
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1 sh=$2; shift 2; echo "== $b $sh $*"; WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
# The two fastest shapes by attention + merge time.
BEST=$(for f in $OUT/prof-main-*.json; do python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print(a.get('attention',0)+a.get('attention_merge',0), sys.argv[1].split('prof-main-')[1][:-5])" $f; done | sort -n | head -2 | cut -d' ' -f2 | tr '\n' ' ')
echo "best: $BEST"
for rd in 1 2; do
  r base 64x4 $M --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
  for sh in 64x4 $BEST; do r main $sh $M --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192; done
done
echo "done after $(( $(date +%s) - S )) s"
