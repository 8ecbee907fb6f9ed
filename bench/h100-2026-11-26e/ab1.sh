#!/usr/bin/env bash
# First device call (2026-11-26e). new = split.wgsl with every K and V
# load of a thread issued at the start as named values, and the V sums'
# lanes meeting HB heads a round (2 barriers a round instead of 2 a
# head); base = 3907711 (cd911bf's code). Kernel tests on the H100; tg32
# at depth on synthetic files, two rounds interleaved; profiles of the 8B
# at 8192 keys; the head-size-64 split threshold at 2048 keys.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 split layer_lists attention 2>&1 | grep -E "result|FAIL|panicked"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
.dev/webgguf-base bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in base new; do
  r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
  r $b --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
  r $b --synthetic gemma3-270m:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
done; echo "after $(( $(date +%s) - S )) s"; done
for k in 1024 2048; do WEBGGUF_GPU_DEEP_KEYS_64=$k r new --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 1024,2048; done
r new --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 1024,2048
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
for rd in 1 2; do for b in base new; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-8b-d8192-$b-$rd.json 2>/dev/null; echo "profile $b rc=$? $(att $OUT/prof-8b-d8192-$b-$rd.json)"; done; done
echo "done after $(( $(date +%s) - S )) s"
