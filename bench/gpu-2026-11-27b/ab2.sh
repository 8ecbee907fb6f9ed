#!/usr/bin/env bash
# Second device call (2026-11-27b): few.wgsl (decode attention below 64
# keys, one workgroup per query head, loads in one round trip) against the
# chunked kernel. Every gpu:: kernel test of the new code first (among them
# few_attention_matches_chunked_and_cpu: few.wgsl bit for bit against the
# chunked kernel). Then tg128 and pp512: base = bf15c17 (built at
# 6b67000, same code), new, and new with WEBGGUF_GPU_FEW=0 (the chunked
# kernel, same binary), two rounds; decode profiles at 0 and 48 keys.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM|left|right" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 512 -n 128 -r 2 2>&1 | grep -E "pp512|tg|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-base bench --synthetic llama-3.2-1b:Q4_K -p 16 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0 gemma3-270m:Q8_0; do
    r base $m A=1
    r new $m A=1
    r new $m WEBGGUF_GPU_FEW=0
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for d in 0 48; do
  timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:Q4_K -n 16 -d $d > ${OUT:-/tmp}/ab2-prof-8b-q4k-d$d-new.json 2>&1; echo "profile new d$d rc=$?"
done
echo "done after $(( $(date +%s) - S )) s"
