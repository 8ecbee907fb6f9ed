#!/usr/bin/env bash
# 2026-11-27g, last call, a quiet machine (nothing building beside it):
# (1) naga's loop counters on (WEBGGUF_GPU_LOOP_BOUND=1) and off (main
# 3e31d14's default) on the smaller synthetic shapes the issue allows 3%,
# three interleaved rounds; (2) elim.sh's eliminations again on main's
# compile (wip/elim 986ed25 = main 3e31d14 + WEBGGUF_SKIP / WEBGGUF_ONE,
# timing only). Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=$(date +%s)
M=.dev/webgguf-main
r() { local b=$1 tag=$2; shift 2; echo "== $tag | $(timeout 150 $b bench --backend gpu "$@" 2>&1 | grep -E 'pp|tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
$M bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for rd in 1 2 3; do
  for m in smollm2-135m:Q8_0 tinyllama-1.1b:Q4_0 gemma3-270m:Q8_0; do
    for lb in 1 0; do WEBGGUF_GPU_LOOP_BOUND=$lb r $M "$m bound=$lb" --synthetic $m -p 512 -n 128 -r 3; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
B=.dev/webgguf-elim
$B synth llama-3.1-8b:Q4_K /tmp/8b.gguf > /dev/null
for rd in 1 2; do
  r $B "8b base" -m /tmp/8b.gguf -p 1 -n 128 -r 3
  WEBGGUF_SKIP=quantize_x r $B "8b skip quantize_x" -m /tmp/8b.gguf -p 1 -n 128 -r 3
  WEBGGUF_SKIP=attention r $B "8b skip attention" -m /tmp/8b.gguf -p 1 -n 128 -r 3
  WEBGGUF_SKIP=quantize_x,attention r $B "8b skip both" -m /tmp/8b.gguf -p 1 -n 128 -r 3
done
for d in 2048 8192; do
  r $B "8b d$d base" -m /tmp/8b.gguf --ctx $((d + 256)) -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention_merge r $B "8b d$d skip merge" -m /tmp/8b.gguf --ctx $((d + 256)) -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention r $B "8b d$d skip split" -m /tmp/8b.gguf --ctx $((d + 256)) -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention,attention_merge r $B "8b d$d skip both" -m /tmp/8b.gguf --ctx $((d + 256)) -p 1 -n 32 -r 2 -d $d
done
echo "done after $(( $(date +%s) - S )) s"
