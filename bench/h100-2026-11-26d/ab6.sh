#!/usr/bin/env bash
# Sixth device call (2026-11-26d). m1 = the merge (attention.wgsl
# merge_out) with four splits' loads in flight per lane and round, named
# values; v5 = fd4f1a2 (one split a round). Kernel tests on the H100;
# profiles at d8192 (8B, 1B); tg32 at depth and tg128 from 0 on the five
# synthetic shapes, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -k "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
.dev/tests-lib --test-threads 1 attention 2>&1 | grep -E "^test |result"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
n=sum(k['count'] for k in d if k['kernel']=='attention')
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/n, a.get('attention_merge',0)/n))" "$1"; }
prof() { local b=$1; shift; timeout 120 .dev/webgguf-$b gpu-profile "$@" -n 8 -d 8192 > /tmp/p.json 2>/dev/null; echo "profile $b $* rc=$? $(att /tmp/p.json)"; }
.dev/webgguf-v5 bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for b in v5 m1 v5 m1; do prof $b --synthetic llama-3.1-8b:Q4_K; prof $b --synthetic llama-3.2-1b:Q4_K; done
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic" | grep tg | tr -s ' '; }
for rd in 1 2; do
  for b in v5 m1; do
    r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 512,2048,8192
    r $b --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 512,2048,8192
    for m in smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K gemma3-270m:Q8_0 llama-3.1-8b:Q4_K; do
      r $b --synthetic $m -p 1 -n 128 -r 3
    done
  done
  echo "after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
