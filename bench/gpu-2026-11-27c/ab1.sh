#!/usr/bin/env bash
# First device call (2026-11-27c): mid.wgsl (decode attention from 64 keys
# up to 256 in one dispatch, no merge). new = the working tree (mid.wgsl
# on by default; WEBGGUF_GPU_MID_KEYS=0 gives main's path: attention.wgsl
# `split` + merge past 64 keys); exp = new plus ab1-exp.patch
# (WEBGGUF_EXP, read in that binary only): noattn drops the decode
# attention op past 64 keys (wrong output, timing only: what the
# attention there costs at most), vlate issues mid.wgsl's V loads after
# the weights instead of at the start.
# Every gpu:: test of new first; profiles at 96 keys; tg128 from 0 (64 of
# its steps past 64 keys) two rounds; tg32 after 160 keys.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
.dev/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test |test result|FAIL|panicked|NVVM" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for v in "new WEBGGUF_GPU_MID_KEYS=0" "new A=1" "exp WEBGGUF_EXP=vlate"; do
    set -- $v; b=$1; shift
    env "$@" timeout 120 .dev/webgguf-$b gpu-profile --synthetic $m -n 8 -d 96 > /tmp/p.json 2>&1
    echo "profile $m $v d96: $(tr -d ' \n' < /tmp/p.json | grep -o '"kernel":"attention[a-z_]*","count":[0-9]*,"us":[0-9.]*' | tr '\n' ' ')"
  done
done
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 16 -n 128 -r 2 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0 gemma3-270m:Q8_0; do
    r new $m WEBGGUF_GPU_MID_KEYS=0
    r new $m A=1
    r exp $m WEBGGUF_EXP=vlate
    r exp $m WEBGGUF_EXP=noattn WEBGGUF_GPU_MID_KEYS=0
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
d() { local b=$1 m=$2; shift 2; echo "== d160 $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 16 -n 32 -d 160 -r 2 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K gemma3-270m:Q8_0; do
  d new $m WEBGGUF_GPU_MID_KEYS=0
  d new $m A=1
  d exp $m WEBGGUF_EXP=vlate
done
echo "done after $(( $(date +%s) - S )) s"
