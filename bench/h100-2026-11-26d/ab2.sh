#!/usr/bin/env bash
# Second device call (2026-11-26d): what holds split.wgsl at ~0.37 TB/s,
# by elimination (timing only; wrong outputs). main = .dev/webgguf-main
# (as in ab1); noV / noK / noKV: its split.wgsl without the V loads, the K
# loads, or both (each buffer kept bound by a load that never runs);
# contig: the same loads at head-major addresses (kv head, key), as if the
# cache were laid out [kv_head][ctx][head_dim] (same bytes, each kv head's
# rows contiguous). Profiles at d8192, synthetic 8B Q4_K, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
S=$(date +%s)
M="--synthetic llama-3.1-8b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
prof() { local b=$1 rd=$2; timeout 120 .dev/webgguf-$b gpu-profile $M -n 8 -d 8192 > $OUT/prof-$b-$rd.json 2>$OUT/err-$b-$rd.txt; echo "profile $b rc=$? $(att $OUT/prof-$b-$rd.json)"; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in main noV noK noKV contig; do prof $b $rd; done; done
echo "done after $(( $(date +%s) - S )) s"
