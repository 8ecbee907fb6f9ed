#!/usr/bin/env bash
# First device call (2026-11-27b): what decode attention at short contexts
# costs. base = bf15c17 (built at 6b67000, same code); exp = base plus
# WEBGGUF_EXP (read in that binary only): noattn drops the decode attention
# op below SPLIT_KEYS keys (wrong output, timing only), noround replays the
# chunked kernel's accumulator without the f16 rounding, deep runs
# split.wgsl + merge from the first key (with WEBGGUF_GPU_DEEP_KEYS=1).
# tg64 = positions 0-63, all in the chunked kernel on main.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 16 -n 64 -r 3 2>&1 | grep -E "tg64|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-base bench --synthetic llama-3.2-1b:Q4_K -p 16 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0; do
    r base $m A=1
    r exp $m WEBGGUF_EXP=noattn
    r exp $m WEBGGUF_EXP=noround
    r exp $m WEBGGUF_EXP=deep WEBGGUF_GPU_DEEP_KEYS=1 WEBGGUF_GPU_DEEP_KEYS_64=1
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for d in 0 48; do
  for v in "base A=1" "exp WEBGGUF_EXP=deep WEBGGUF_GPU_DEEP_KEYS=1 WEBGGUF_GPU_DEEP_KEYS_64=1"; do
    set -- $v; b=$1; shift
    env "$@" timeout 120 .dev/webgguf-$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 16 -d $d > ${OUT:-/tmp}/ab1-prof-8b-q4k-d$d-$b.json 2>&1; echo "profile $b d$d rc=$?"
  done
done
echo "done after $(( $(date +%s) - S )) s"
