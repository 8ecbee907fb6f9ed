#!/usr/bin/env bash
# 2026-11-27g: does the bench's prompt change our tg128 (decode from
# position 0 either way)? llama-bench's tg test decodes from an empty
# cache with no prompt before it; `webgguf bench -p 512 -n 128` prefills
# 512 tokens before each tg repetition, `-p 0` nothing. main 3e31d14,
# synthetic 8B and 1B Q4_K files, interleaved, three rounds. Carry ['.dev'].
set -u
[ -x .dev/webgguf-main ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=.dev/webgguf-main
[ -f /tmp/8b.gguf ] || $M synth llama-3.1-8b:Q4_K /tmp/8b.gguf > /dev/null
[ -f /tmp/1b.gguf ] || $M synth llama-3.2-1b:Q4_K /tmp/1b.gguf > /dev/null
r() { local tag=$1; shift; echo "== $tag | $(timeout 150 $M bench --backend gpu "$@" --json 2>&1 | python3 -c "
import json,sys
d=json.loads([l for l in sys.stdin if l.startswith('{')][-1])
print('tg median %.1f, reps ms %s' % (d['tg_median_tok_s'], ' '.join('%.0f' % x for x in d['tg_rep_ms'])))" 2>&1)"; }
for rd in 1 2 3; do
  for m in 8b 1b; do for p in 0 1 512; do r "$m -p $p" -m /tmp/$m.gguf -p $p -n 128 -r 5; done; done
done
