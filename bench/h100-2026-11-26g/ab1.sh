#!/usr/bin/env bash
# First device call (2026-11-26g). main = 1bffe89; new = main with
# (a) IQ4_XS/IQ4_NL code book by nibble and byte position (64 words, 8
# conflict-free lookups a quant word) instead of by byte (256 words, 4
# lookups), and (b) F16 decode products read through the vec4 alias of W
# (MvPath::F16Vec; WEBGGUF_GPU_VW=0 turns it off). Kernel tests on the
# H100, then decode on synthetic files, main against new, two rounds, and
# gpu-profile's decode kernels.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
echo "== tests-lib"; .dev/tests-lib --test-threads 1 matvec wide_int gate_up qkv int_matvec 2>&1 | grep -E "test result|FAIL|panicked|NVVM"
echo "after $(( $(date +%s) - S )) s"
r() { local b=$1 m=$2; echo "== $b $m ${3:-}"; env ${3:-X=1} timeout 150 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128|rror" | tr -s ' ' | cut -c1-200; }
k() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
a={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}
print(' '.join('%s %.0f us' % (n, a.get(n,0)) for n in ['qkv','gate_up','matvec','lm_head']), 'sum %.0f us' % d['kernels_decode']['sum_of_kernels_us'], 'gpu_pass %.0f us' % d['steps']['median_us']['gpu_pass'])" "$1" 2>&1 | tail -1; }
p() { local b=$1 m=$2; timeout 150 .dev/webgguf-$b gpu-profile --synthetic $m -n 16 > $OUT/prof-$b-${m/:/-}.json 2>/tmp/err.txt; echo "profile $b $m: $(k $OUT/prof-$b-${m/:/-}.json) $(tail -c 200 /tmp/err.txt)"; }
.dev/webgguf-main bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:F16 llama-3.2-1b:IQ4_XS; do for b in main new; do r $b $m; done; done
  r new llama-3.1-8b:F16 WEBGGUF_GPU_VW=0
  echo "after $(( $(date +%s) - S )) s"
done
for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:F16; do for b in main new; do p $b $m; done; done
for m in llama-3.1-8b:Q4_K llama-3.2-1b:F16; do for b in main new; do r $b $m; done; done
echo "done after $(( $(date +%s) - S )) s"
