#!/usr/bin/env bash
# Fourth device call (2026-11-26e). new = b654c84 (split.wgsl's loads at
# once, the online merge, split.wgsl from 1024 keys at head size 64);
# base = 3907711. tg128 from 0 on the small shapes and the 8B (the merge
# runs from 65 keys), three rounds interleaved; split.wgsl from 512 keys
# against 1024 at d512, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local b=$1; shift; echo "== $b $*"; timeout 200 .dev/webgguf-$b bench "$@" 2>&1 | grep -E "^\| synthetic|rror" | grep -E "tg|rror" | tr -s ' '; }
.dev/webgguf-base bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2 3; do for b in base new; do
  for m in smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do r $b --synthetic $m -p 1 -n 128 -r 3; done
done; echo "after $(( $(date +%s) - S )) s"; done
D="--ctx 8448 -p 1 -n 32 -r 2 -d 512"
for rd in 1 2; do for k in 512 1024; do
  WEBGGUF_GPU_DEEP_KEYS=$k r new --synthetic llama-3.1-8b:Q4_K $D
  WEBGGUF_GPU_DEEP_KEYS_64=$k r new --synthetic llama-3.2-1b:Q4_K $D
  WEBGGUF_GPU_DEEP_KEYS_64=$k r new --synthetic tinyllama-1.1b:Q4_0 $D
done; done
echo "done after $(( $(date +%s) - S )) s"
