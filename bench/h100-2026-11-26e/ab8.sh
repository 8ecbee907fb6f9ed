#!/usr/bin/env bash
# Eighth device call (2026-11-26e): main = 8681d20; new = its flash.wgsl
# (prefill attention) with the per-thread arrays (the V sums acc[4], the
# staged K and V words, the query words) as named values. pp512, two
# rounds interleaved, and the prefill profile's attention on the 8B.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic|rror" | grep -E "pp|rror" | tr -s ' '; }
.dev/webgguf-main bench --synthetic llama-3.1-8b:Q4_K -p 512 -n 8 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do for b in main new; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0 gemma3-270m:Q8_0; do r $b --synthetic $m -p 512 -n 1 -r 3; done
done; done
for b in main new; do timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 > $OUT/prof-8b-$b.json 2>/dev/null
  python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))['kernels_prefill']
a={k['kernel']:k['us'] for k in d['by_kernel']}
print(sys.argv[2], 'prefill: attention %.0f us, matmul %.0f us, sum %.0f us' % (a.get('attention',0), a.get('matmul',0), d['sum_of_kernels_us']))" $OUT/prof-8b-$b.json $b; done
echo "done after $(( $(date +%s) - S )) s"
