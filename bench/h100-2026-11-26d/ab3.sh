#!/usr/bin/env bash
# Third device call (2026-11-26d): ab2 found split.wgsl without any K or V
# loads (noKV) still at 72-79 us a layer against main's 88, so its time is
# not memory. Which phase then, by elimination from noKV (timing only):
# eNoVloop (no V sums), eNoDot (no partial dots), eNoOut (the output's
# per-head loop for one head only: 2 barriers, not 8), eNoSoft (no max /
# exp / sum phases: 3 barriers fewer), eNoQ (no query loads), eSkel (all of
# those removed). Profiles at d8192, synthetic 8B Q4_K, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -k "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
M="--synthetic llama-3.1-8b:Q4_K"
att() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_decode_at_depth']['by_kernel']
a={k['kernel']:k['us'] for k in d}
print('attention %.1f us/layer, merge %.1f us/layer' % (a.get('attention',0)/32, a.get('attention_merge',0)/32))" "$1"; }
prof() { local b=$1 rd=$2; timeout 120 .dev/webgguf-$b gpu-profile $M -n 8 -d 8192 > /tmp/prof-$b-$rd.json 2>/dev/null; echo "profile $b rc=$? $(att /tmp/prof-$b-$rd.json)"; }
.dev/webgguf-main bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in main noKV eNoVloop eNoDot eNoOut eNoSoft eNoQ eSkel; do prof $b $rd; done; done
echo "done after $(( $(date +%s) - S )) s"
