#!/usr/bin/env bash
# Third device call (2026-11-27). Where the code-book formats' time goes,
# one experimental binary (WEBGGUF_EXP, read by the generator; not
# committed): "" = main; pre = the first wide unit's quant words (and the
# IQ4_XS header) loaded before the table fill, so that their round trip
# overlaps it (the loop loads them again); nofill = no table fill and no
# barrier (wrong values: an upper bound on what the fill costs). Also 4
# rows a workgroup for plain products (WEBGGUF_GPU_MV_ROWS=0,0,4: wo and
# down, 2 by default), alone and with pre. tg128, two rounds.
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done
S=$(date +%s)
r() { local e=${1#none} rows=$2 m=$3; echo "== exp=$e rows=$rows $m"; WEBGGUF_EXP=$e WEBGGUF_GPU_MV_ROWS=$rows timeout 100 .dev/webgguf-new bench --synthetic $m -p 64 -n 128 -r 3 2>&1 | grep -E "tg128|rror" | tr -s ' ' | cut -c1-200; }
.dev/webgguf-new bench --synthetic llama-3.2-1b:Q4_K -p 512 -n 16 -r 2 > /dev/null 2>&1   # untimed warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for s in "none 0,0,0" "pre 0,0,0" "nofill 0,0,0" "none 0,0,4" "pre 0,0,4"; do r $s $m; done
  done
  echo "round $rd after $(( $(date +%s) - S )) s"
done
