#!/usr/bin/env bash
# Third H200 call (2026-11-27c; not kept): mid.wgsl in phases (an online softmax
# over phases of at most 256 keys, 128 at head size 256), so that it can
# take decode up to 512 keys (tiers of 128, 256 and 512). cur = bc8fcdf
# (tiers of 128 and 256, one pass; the split path past 256 keys); ph =
# the phases (default up to 512 keys; WEBGGUF_GPU_MID_KEYS=256 stops at
# 256 as cur does). mid's kernel tests first; tg128 from 0, 128, 256 and
# 384 keys (each range of 128 positions), two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu::tests::mid gpu::tests::layer 2>&1 | grep -E "^test |test result|FAIL|panicked" | cut -c1-300
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m --ctx 768 -p 1 -n 128 -d 0,128,256,384 -r 2 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    r cur $m A=1
    r ph $m A=1
    r ph $m WEBGGUF_GPU_MID_KEYS=256
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
