#!/usr/bin/env bash
# Sixth device call (2026-11-26e): main = ecb9cf2; lateV = its split.wgsl
# with the V loads issued after the weights (all at once still) instead of
# at the start (patches/ab6-lateV.patch): is the start's register load what
# slowed split.wgsl's skeleton (ab5: 30 us a layer with nothing loaded,
# against 20 before b654c84)? Profiles at d8192 and tg32 at depth,
# synthetic 8B Q4_K and 1B Q4_K, two rounds after a warm-up.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
prof() { local b=$1 rd=$2; timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-$b-$rd.json 2>/dev/null; echo "profile $b rc=$? $(att $OUT/prof-$b-$rd.json)"; }
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic|rror" | grep -E "tg|rror" | tr -s ' '; }
.dev/webgguf-main bench --synthetic llama-3.1-8b:Q4_K -p 64 -n 64 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in main lateV; do
  prof $b $rd
  r $b --synthetic llama-3.1-8b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
  r $b --synthetic llama-3.2-1b:Q4_K --ctx 8448 -p 1 -n 32 -r 2 -d 2048,8192
done; done
echo "done after $(( $(date +%s) - S )) s"
