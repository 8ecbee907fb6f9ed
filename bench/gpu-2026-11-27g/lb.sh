#!/usr/bin/env bash
# 2026-11-27g: naga's loop counters off (GpuTuning::loop_bounding false,
# WEBGGUF_GPU_LOOP_BOUND=0) against on (wgpu's default, main), one binary
# (main e9abf2d + the knob), interleaved, two rounds; synthetic files
# (every matrix in one type). Then the driver's registers for both ways
# (tools/pipeline-stats with and without --trusted-loops). Carry ['.dev'].
set -u
[ -x .dev/webgguf-lb ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=.dev/webgguf-lb
S=$(date +%s)
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K llama-3.1-8b:Q6_K llama-3.1-8b:IQ4_XS; do
  f=/tmp/$(echo $m | tr ':' '-').gguf; [ -f $f ] || $B synth $m $f > /dev/null
done
echo "files after $(( $(date +%s) - S )) s"
r() { local tag=$1; shift; echo "== $tag | $(timeout 150 $B bench --backend gpu "$@" 2>&1 | grep -E 'pp|tg|rror' | tr -s ' ' | cut -d'|' -f4,5 | tr '\n' ' ')"; }
$B bench --backend gpu -m /tmp/llama-3.2-1b-Q4_K.gguf -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for rd in 1 2; do
  for m in llama-3.1-8b-Q4_K llama-3.2-1b-Q4_K llama-3.1-8b-Q6_K llama-3.1-8b-IQ4_XS; do
    for lb in 1 0; do WEBGGUF_GPU_LOOP_BOUND=$lb r "$m bound=$lb" -m /tmp/$m.gguf -p 512 -n 128 -r 3; done
  done
  for lb in 1 0; do WEBGGUF_GPU_LOOP_BOUND=$lb r "8b d2048 bound=$lb" -m /tmp/llama-3.1-8b-Q4_K.gguf -p 1 -n 32 -r 2 -d 2048; done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
W=/tmp/lbst; rm -rf $W; mkdir -p $W
$B gpu-profile -m /tmp/llama-3.1-8b-Q4_K.gguf -n 2 -d 2048 --shaders $W/sh > /dev/null 2>&1
.dev/pstats $W/sh > $W/bound.tsv 2>/dev/null
.dev/pstats --trusted-loops $W/sh > $W/trusted.tsv 2>/dev/null
paste <(grep "Register Count" $W/bound.tsv | cut -f1,2,3,6) <(grep "Register Count" $W/trusted.tsv | cut -f6)
