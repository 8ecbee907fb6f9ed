#!/usr/bin/env bash
# Fourth device call (2026-11-26d). ab3 found split.wgsl's V sums the
# largest part of its time even without their loads. v4 = split.wgsl with
# the V sums in vec4 registers (four heads a vec4, the weights read as one
# vec4 a key; no per-thread arrays there); old = ab1's main (same code,
# the V sums in a per-head array). v4h64: v4 with split.wgsl allowed at
# head size 64 too (kernels::deep_split), for the 1B. Kernel tests on the
# H100; profiles at d8192; tg32 at d2048 and d8192, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -k "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 split_attention 2>&1 | grep -E "^test |result"
M="--synthetic llama-3.1-8b:Q4_K"
B1="--synthetic llama-3.2-1b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
n=sum(k['count'] for k in d if k['kernel']=='attention')
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/n, a.get('attention_merge',0)/n))" "$1"; }
prof() { local b=$1 sh=$2; shift 2; WEBGGUF_GPU_DEEP_SHAPE=$sh timeout 120 .dev/webgguf-$b gpu-profile "$@" -n 8 -d 8192 > $OUT/prof-$b-$sh-$1$2.json 2>/dev/null; echo "profile $b $sh $* rc=$? $(att $OUT/prof-$b-$sh-$1$2.json)"; }
.dev/webgguf-old bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for b in old v4 old v4; do prof $b 64x4 $M; done
for sh in 32x4 128x2 32x8; do prof v4 $sh $M; done
for b in old v4h64 old v4h64; do prof $b 64x4 $B1; done
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
for rd in 1 2; do
  for b in old v4; do r $b $M --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192; done
  for b in old v4h64; do r $b $B1 --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192; done
done
echo "done after $(( $(date +%s) - S )) s"
