#!/usr/bin/env bash
# Second device call (2026-11-27c): mid.wgsl's cost past ab1. new as in
# ab1 (mid.wgsl up to 256 keys); WEBGGUF_GPU_MID_KEYS=128 takes it only up
# to 128 keys (half the K and V words a thread), 0 main's path. exp = new
# plus ab2-exp.patch: WEBGGUF_EXP=rb loads the K rounds past the first
# and the V words past each lane's first only where some key of theirs is
# in use (a uniform branch each); noattn as in ab1.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K; do
  for d in 96 200; do
    for v in "new WEBGGUF_GPU_MID_KEYS=0" "new A=1" "new WEBGGUF_GPU_MID_KEYS=128" "exp WEBGGUF_EXP=rb"; do
      set -- $v; b=$1; shift
      env "$@" timeout 120 .dev/webgguf-$b gpu-profile --synthetic $m -n 8 -d $d > /tmp/p.json 2>&1
      echo "profile $m $v d$d: $(tr -d ' \n' < /tmp/p.json | grep -o '"kernel":"attention[a-z_]*","count":[0-9]*,"us":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
r() { local b=$1 m=$2; shift 2; echo "== $b $m $*"; env "$@" timeout 100 .dev/webgguf-$b bench --backend gpu --synthetic $m -p 16 -n 128 -d 0,128 -r 2 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
for rd in 1 2; do
  for m in llama-3.1-8b:F16 llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q8_0 gemma3-270m:Q8_0; do
    r new $m WEBGGUF_GPU_MID_KEYS=0
    r new $m A=1
    r new $m WEBGGUF_GPU_MID_KEYS=128
    r exp $m WEBGGUF_EXP=rb
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
echo "done after $(( $(date +%s) - S )) s"
