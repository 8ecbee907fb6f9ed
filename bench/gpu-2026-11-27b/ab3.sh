#!/usr/bin/env bash
# Third device call (2026-11-27b): why few.wgsl (ab2) is slower than the
# chunked kernel on the llama shapes, by elimination. exp = ab2's new
# plus WEBGGUF_EXP read by few.wgsl's generator (that binary only; the
# patch is ab3-exp.patch): nov (no V loads: zeros), nok (no K loads:
# zeros), norep (no replay), loopv (the replay a loop over the keys
# reading V from memory, no named values), loopk (the dot a loop over the
# row's 16-byte words). Decode profiles (attention per kernel, each
# dispatch timed alone) at 0 and 48 keys on the 1B Q4_K; then tg128 of
# the loop forms against the chunked kernel (WEBGGUF_GPU_FEW=0).
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do
  for v in chunked base nov nok norep loopv loopk "loopv loopk"; do
    if [ "$v" = chunked ]; then e="WEBGGUF_GPU_FEW=0"; else e="WEBGGUF_EXP=$v"; [ "$v" = base ] && e="A=1"; fi
    for d in 0 48; do
      f=${OUT:-/tmp}/ab3-prof-${m%%:*}-$(echo $v | tr ' ' '+')-d$d.json
      env "$e" timeout 120 .dev/webgguf-exp gpu-profile --synthetic $m -n 8 -d $d > $f 2>&1; echo "$m [$v] d$d rc=$?"
    done
  done
  echo "after $(( $(date +%s) - S )) s"
done
r() { local m=$1; shift; echo "== $m $*"; env "$@" timeout 100 .dev/webgguf-exp bench --backend gpu --synthetic $m -p 512 -n 128 -r 2 2>&1 | grep -E "tg|rror" | tr -s ' ' | cut -c1-200; }
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K smollm2-135m:Q8_0; do
  r $m WEBGGUF_GPU_FEW=0
  r $m "WEBGGUF_EXP=loopv loopk"
  r $m WEBGGUF_EXP=loopv
done
echo "done after $(( $(date +%s) - S )) s"
