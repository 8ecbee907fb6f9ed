#!/usr/bin/env bash
# 2026-11-27g: where the in-stream decode time goes, by elimination
# (timing only: outputs are wrong). wip/elim's CLI (5d86726, main e9abf2d
# plus WEBGGUF_SKIP=label,.. which leaves those ops out of the recorded
# step, and WEBGGUF_ONE=label,.. which dispatches one workgroup of them:
# the dispatch and its barrier stay, the work goes). Synthetic files
# (every matrix Q4_K), written once. Carry ['.dev'].
set -u
[ -x .dev/webgguf-elim ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=.dev/webgguf-elim
S=$(date +%s)
[ -f /tmp/8b.gguf ] || $B synth llama-3.1-8b:Q4_K /tmp/8b.gguf > /dev/null
[ -f /tmp/1b.gguf ] || $B synth llama-3.2-1b:Q4_K /tmp/1b.gguf > /dev/null
echo "files after $(( $(date +%s) - S )) s"
r() { local tag=$1; shift; echo "== $tag | $(timeout 150 $B bench --backend gpu "$@" 2>&1 | grep -E 'tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
$B bench --backend gpu -m /tmp/1b.gguf -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for rd in 1 2; do
  for m in 8b 1b; do
    r "$m base" -m /tmp/$m.gguf -p 1 -n 128 -r 3
    WEBGGUF_SKIP=quantize_x r "$m skip quantize_x" -m /tmp/$m.gguf -p 1 -n 128 -r 3
    WEBGGUF_ONE=quantize_x r "$m one quantize_x" -m /tmp/$m.gguf -p 1 -n 128 -r 3
    WEBGGUF_SKIP=attention r "$m skip attention" -m /tmp/$m.gguf -p 1 -n 128 -r 3
    WEBGGUF_ONE=attention r "$m one attention" -m /tmp/$m.gguf -p 1 -n 128 -r 3
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
for d in 8192 2048; do
  r "8b d$d base" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention_merge r "8b d$d skip merge" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  WEBGGUF_ONE=attention_merge r "8b d$d one merge" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention r "8b d$d skip split" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  WEBGGUF_ONE=attention r "8b d$d one split" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  WEBGGUF_SKIP=attention,attention_merge r "8b d$d skip both" -m /tmp/8b.gguf -p 1 -n 32 -r 2 -d $d
  echo "d$d after $(( $(date +%s) - S )) s"
done
