#!/usr/bin/env bash
# Fifth device call (2026-11-26d). v5 = v4 (ab4) plus split.wgsl's partial
# dots in vec4 registers (the queries laid out four heads a vec4, two
# vec4 loads a key word) and the scores kept only by key (wv); v5h64: v5
# with split.wgsl allowed at head size 64 (kernels::deep_split); old =
# ab1's main. Kernel tests on the H100; profiles at d8192; tg32 at
# depth, two rounds: the 8B (v4 / v5), the 8B at d512 / d1024 with
# split.wgsl from 512 keys, and the 64-dim shapes (1B, TinyLlama) with
# split.wgsl from 2048 keys (v5h64) or never (v5); Gemma 3 270M (head size
# 256: split.wgsl from 2048 keys) old / v5.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -k "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 split_attention deep_shape 2>&1 | grep -E "^test |result"
M="--synthetic llama-3.1-8b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
n=sum(k['count'] for k in d if k['kernel']=='attention')
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/n, a.get('attention_merge',0)/n))" "$1"; }
prof() { local b=$1; shift; timeout 120 .dev/webgguf-$b gpu-profile "$@" -n 8 -d 8192 > /tmp/p.json 2>/dev/null; echo "profile $b $* rc=$? $(att /tmp/p.json)"; }
.dev/webgguf-old bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for b in v4 v5 v4 v5; do prof $b $M; done
.dev/webgguf-v5 gpu-profile $M -n 8 -d 8192 > $OUT/prof-8b-d8192-v5.json 2>/dev/null
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
for rd in 1 2; do
  for b in v4 v5; do r $b $M --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192; done
  for k in 2048 512; do echo "DEEP_KEYS=$k"; WEBGGUF_GPU_DEEP_KEYS=$k r v5 $M --ctx 1100 -p 1 -n 32 -r 2 -d 512,1024; done
  for m in llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
    for b in v5 v5h64; do r $b --synthetic $m --ctx 8448 -p 1 -n 32 -r 2 -d 2048,4096,8192; done
  done
  for b in old v5; do r $b --synthetic gemma3-270m:Q8_0 --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192; done
  echo "after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
