#!/usr/bin/env bash
# 2026-11-28: 64 threads for the code-book formats' plain products past
# 8,191 columns (the 8B's down product, 14,336), branch wip/bookwg
# (timing only: WEBGGUF_BOOKWG= main's rule, gt = also past 8,192
# columns, all = also at 8,192, the 1B's down). tg128 in the stream,
# synthetic files, one binary, interleaved, medians of -r 3. Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
gunzip -kf .dev/webgguf-bookwg.gz; chmod +x .dev/webgguf-bookwg
M=.dev/webgguf-bookwg
$M bench --backend gpu --synthetic smollm2-135m:Q8_0 -p 64 -n 64 -r 1 > /dev/null 2>&1   # warm-up
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for v in main gt all; do
      x=$(WEBGGUF_BOOKWG=$v timeout 100 $M bench --backend gpu --synthetic $m -p 64 -n 128 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f (mean %.1f)" % (d["tg_median_tok_s"], d["tg_tok_s"]))' 2>/dev/null)
      echo "$rd $m $v ${x:-fail}"
    done
  done
done
