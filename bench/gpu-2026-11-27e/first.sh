#!/usr/bin/env bash
# The 1B files' low first benches (2026-11-27c/e: half the pp512 and
# 80-90% of the tg128 on the first bench of some formats, normal minutes
# later): each synthetic llama-3.2-1b format benched twice in a row, each
# a new process, formats never run before on this machine first, with
# each repetition's milliseconds (aa51e09). Carry ['.dev'].
set -u
for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
gunzip -kf .dev/webgguf.gz; chmod +x .dev/webgguf
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in Q5_K IQ4_XS F16 Q4_K; do for i in 1 2; do
  S=$(date +%s.%N)
  r=$(timeout 100 .dev/webgguf bench --backend gpu --synthetic llama-3.2-1b:$t -p 512 -n 128 -r 3 --json 2>&1 | tail -1)
  echo "$t run $i ($(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $S}") s): $(echo "$r" | python3 -c "import json,sys; d=json.load(sys.stdin); print('pp %.0f tg %.1f pp_ms %s tg_ms %s' % (d['pp_tok_s'], d['tg_tok_s'], [round(x,1) for x in d['pp_rep_ms']], [round(x,1) for x in d['tg_rep_ms']]))" 2>&1)"
done; done
ls -la ~/.nv/ComputeCache 2>/dev/null | head -3; du -sh ~/.cache/nvidia 2>/dev/null
