#!/usr/bin/env bash
# Issue 12's "the smaller shapes do not regress by more than 3%", over the
# whole issue: main (.sbs/webgguf) against the CLI of c197acf, main just
# before the first commit (f747dbb, the integer decode path), as
# .sbs/webgguf-old, on synthetic SmolLM2 and TinyLlama in Q4_0, Q8_0 and
# F16 (the types that commit's synthetic presets have), pp512 / tg128,
# -r 3, two rounds in opposite orders. c197acf's --json has no medians or
# per-repetition times, so both are read as tg_tok_s / pp_tok_s (total
# tokens over total time, the same definition in both).
# Before the call, here: build both (c197acf in its own worktree and
# target dir), strip and gzip them as .sbs/webgguf.gz and
# .sbs/webgguf-old.gz.   bash bench/gpu-2026-12-02d/small/small.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf webgguf-old
R=$OUT/small.txt
one() {  # ROUND MODEL LABEL BINARY
  local j=$(timeout 90 .sbs/$4 bench --backend gpu --synthetic $2 -p 512 -n 128 -r 3 --json 2>/dev/null | grep '^{' | tail -1)
  local v=$(echo "$j" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f %.1f" % (d["pp_tok_s"], d["tg_tok_s"]))' 2>/dev/null)
  echo "$1 $2 $3 ${v:-fail}" | tee -a $R
}
for rd in 1 2; do
  for m in smollm2-135m:Q4_0 smollm2-135m:Q8_0 smollm2-135m:F16 tinyllama-1.1b:Q4_0 tinyllama-1.1b:Q8_0 tinyllama-1.1b:F16; do
    if [ $rd = 1 ]; then one $rd $m old webgguf-old; one $rd $m main webgguf
    else one $rd $m main webgguf; one $rd $m old webgguf-old; fi
  done
done
nvidia-smi > $OUT/smi.txt 2>&1
