#!/usr/bin/env bash
# Superseded by bench/h100-2026-11-26/ab.sh, which ran it (2026-11-26). Was: the pending H100 A/B: base =
# the CLI at 3bca6ed, new = at the commit that adds this file (quantize_x's
# NORM latency, split.wgsl, the merge's four loads in flight; and the
# integer prefill tile, opt-in, on and off in the new binary). Run from the
# repository root on the device with .dev/webgguf-{base,new} (stripped
# release builds) and the side-by-side kit's .sbs/gl libraries carried;
# $OUT receives the two depth profiles. The first bench is an untimed
# warm-up (the first bench of every device run so far read low).
set -u
for f in .sbs/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
.dev/webgguf-new bench --synthetic smollm2-135m:Q4_0 -p 64 -n 16 -r 1 > /dev/null 2>&1
for m in llama-3.2-1b:Q4_K llama-3.1-8b:Q4_K; do for d in 8192 2048; do for b in base new; do
  echo "== $b $m d$d"; timeout 100 .dev/webgguf-$b bench --synthetic $m --ctx $((d + 256)) -p 1 -n 128 -r 2 -d $d 2>&1 | grep -E "tg128"
done; done; done
for r in 1 2; do for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q4_0 tinyllama-1.1b:Q4_0; do for b in base new; do
  echo "== $b $m d0 round $r"; timeout 60 .dev/webgguf-$b bench --synthetic $m -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128"
done; done; done
# The integer prefill tile (2026-11-25e, opt-in) against the f32 tile it
# would replace in a browser: both with the tensor-core tile off.
for m in llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K smollm2-135m:Q4_0 llama-3.2-1b:Q6_K; do for ip in 0 1; do
  echo "== new $m coop off, int prefill $ip"; WEBGGUF_GPU_COOP=0 WEBGGUF_GPU_INT_PREFILL=$ip timeout 60 .dev/webgguf-new bench --synthetic $m -p 512 -n 16 -r 3 2>&1 | grep -E "pp512"
done; done
timeout 200 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:Q4_K -d 8192 > $OUT/prof-8b-q4k-d8192-new.json 2>/dev/null
timeout 200 .dev/webgguf-base gpu-profile --synthetic llama-3.1-8b:Q4_K -d 8192 > $OUT/prof-8b-q4k-d8192-base.json 2>/dev/null
echo DONE
