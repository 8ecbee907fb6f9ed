#!/usr/bin/env bash
# Third device call (2026-11-26e). new = ab2's plus the merge over
# (heads, groups of each head's dimensions) workgroups
# (WEBGGUF_GPU_MERGE_GROUPS: 1 = ab2's dispatch); base = 3907711. Kernel
# tests on the H100; tg32 at depth by merge groups 1 / 2 / 4, two rounds
# interleaved (head size 64: split.wgsl from 1024 keys); split.wgsl's
# shapes at 8192 keys; tg128 from 0 on the small shapes; profiles.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 split layer_lists attention merge 2>&1 | grep -E "result|FAIL|panicked"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic|rror" | grep -E "tg|rror" | tr -s ' '; }
D="--ctx 8448 -p 1 -n 32 -r 2"
export WEBGGUF_GPU_DEEP_KEYS_64=1024
.dev/webgguf-base bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for g in 1 2 4; do
    export WEBGGUF_GPU_MERGE_GROUPS=$g; echo "-- merge groups $g"
    r new --synthetic llama-3.1-8b:Q4_K $D -d 2048,8192
    r new --synthetic llama-3.2-1b:Q4_K $D -d 2048,8192
    r new --synthetic tinyllama-1.1b:Q4_0 $D -d 2048,8192
  done
  echo "after $(( $(date +%s) - S )) s"
done
export WEBGGUF_GPU_MERGE_GROUPS=4
for sh in 64x4 128x2 32x8 32x4 64x2; do WEBGGUF_GPU_DEEP_SHAPE=$sh r new --synthetic llama-3.1-8b:Q4_K $D -d 8192; WEBGGUF_GPU_DEEP_SHAPE=$sh r new --synthetic llama-3.2-1b:Q4_K $D -d 8192; done
for rd in 1 2; do for b in base new; do
  for m in smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K; do r $b --synthetic $m -p 1 -n 128 -r 3; done
done; done
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
for g in 1 4; do WEBGGUF_GPU_MERGE_GROUPS=$g timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-8b-d8192-g$g.json 2>/dev/null; echo "profile groups $g rc=$? $(att $OUT/prof-8b-d8192-g$g.json)"; done
echo "done after $(( $(date +%s) - S )) s"
