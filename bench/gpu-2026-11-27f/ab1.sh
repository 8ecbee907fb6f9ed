#!/usr/bin/env bash
# 2026-11-27f, first device call. new = wip/offset-sums (Q4_0, Q5_0, Q6_K
# and Q3_K wide decoders take their offset off the x sums; Q3_K reads 21
# words a unit, not 25), base = main df20df5. The wide decoders' tests on
# the H100; tg128 on synthetic files (every matrix in one type: they
# flatter), interleaved, two rounds; gate/up in gpu-profile; then decode
# at depth 2048 with the context allocated at 2304, 32768 and 131072
# (split.wgsl's dispatch is sized by the context, the splits past the
# last key exit at once). Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 wide_int 2>&1 | grep -E "^test |test result|panicked" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local b=$1; shift; echo "== $b $* | $(timeout 120 .dev/webgguf-$b bench --backend gpu "$@" 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
.dev/webgguf-new bench --backend gpu --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_0 llama-3.1-8b:Q5_0 llama-3.1-8b:Q6_K llama-3.1-8b:Q3_K llama-3.1-8b:Q4_K \
           llama-3.2-1b:Q4_0 llama-3.2-1b:Q6_K llama-3.2-1b:Q3_K; do
    for b in base new; do r $b --synthetic $m -p 1 -n 128 -r 3; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for t in Q4_0 Q5_0 Q6_K Q3_K; do for b in base new; do
  timeout 100 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:$t -n 4 > /tmp/p.json 2>/dev/null
  echo "profile 8B $t $b: $(python3 -c "
import json
d = json.load(open('/tmp/p.json'))['kernels_decode']['by_kernel']
print(' '.join('%s=%.1f' % (k['kernel'], k['us']) for k in d if k['kernel'] in ('gate_up', 'matvec', 'qkv', 'lm_head')))
" 2>&1 | tail -1)"
done; done
echo "profiles after $(( $(date +%s) - S )) s"
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
    for c in 2304 32768 131072; do r base --synthetic $m --ctx $c -p 1 -n 32 -r 2 -d 2048; done
  done
done
echo "done after $(( $(date +%s) - S )) s"
