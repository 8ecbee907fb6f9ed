#!/usr/bin/env bash
# Fifth device call (2026-11-27b): few.wgsl as in ab4 (scores by four
# threads a key, V words read 8 keys ahead), with round_f16 and the
# replay steps branch-free (select), against the
# chunked kernel. Every gpu:: kernel test on the device first (round_f16
# is in every f16-rounding kernel). Then tg128 and pp512: base = bf15c17 (built at
# 6b67000), new, and new with WEBGGUF_GPU_FEW=0 (the chunked kernel, same
# binary), two rounds; the attention kernels' times (each dispatch timed
# alone) from decode profiles at 0 and 48 keys.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for v in "new WEBGGUF_GPU_FEW=0" "new A=1"; do
    set -- $v; b=$1; shift
    for d in 0 48; do
      env "$@" timeout 120 .dev/webgguf-$b gpu-profile --synthetic $m -n 8 -d $d > /tmp/p.json 2>&1
      echo "profile $m $v d$d: $(tr -d ' \n' < /tmp/p.json | grep -o '"kernel":"attention[a-z_]*","count":[0-9]*,"us":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 512 -n 128 -r 2 2>&1 | grep -E "pp512|tg|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0 gemma3-270m:Q8_0; do
    r base $m A=1
    r new $m A=1
    r new $m WEBGGUF_GPU_FEW=0
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
