#!/usr/bin/env bash
# Fifth device call (2026-11-26e): what holds split.wgsl at 36 us a layer
# (8B, 8192 keys) now, by elimination (timing only; wrong outputs). main =
# ecb9cf2; noV / noK / noKV: its split.wgsl with the V loads, the K loads
# or both replaced by constants (each buffer kept bound by a load that
# never runs; patches/ab5-*.patch). Profiles at d8192, synthetic 8B Q4_K,
# two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
M="--synthetic llama-3.1-8b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
prof() { local b=$1 rd=$2; timeout 120 .dev/webgguf-$b gpu-profile $M -n 8 -d 8192 > $OUT/prof-$b-$rd.json 2>/dev/null; echo "profile $b rc=$? $(att $OUT/prof-$b-$rd.json)"; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in main noV noK noKV; do prof $b $rd; done; done
echo "done after $(( $(date +%s) - S )) s"
