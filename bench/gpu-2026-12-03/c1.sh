#!/usr/bin/env bash
# Call 1 of 2026-12-03 (detached by start.sh, results in /tmp/res, carry
# ['.sbs'], no llama.cpp), with the timing-only CLI of branch wip/skip
# (skip.patch: WEBGGUF_X_SKIP=LABEL,.. leaves those ops out of every pass;
# WEBGGUF_X_NOBOOK=1 reads IQ4_XS's nibbles without the code book: wrong
# values, timing only). Synthetic single-type files (every matrix in one
# type, the LM head too).
# (a) What each kernel group costs *in the stream* (a step with it
#     against one without it), on the 8B IQ4_XS (two rounds in opposite
#     orders) and F16 (one round): gpu-profile times each group alone,
#     with its own pass's fixed cost.
# (b) The same at depth 2,048 and 8,192 for decode attention's split and
#     merge (8B IQ4_XS).
# (c) What bounds the code book's gate/up: tg64 and gpu-profile with the
#     lookups and without.
set -u
R=/tmp/res
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
W=.sbs/webgguf
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
$W synth llama-3.1-8b:IQ4_XS /tmp/iq.gguf > $R/synth.log 2>&1
log "synth iq rc=$? after $(( $(date +%s) - S )) s"
$W synth llama-3.1-8b:F16 /tmp/f16.gguf >> $R/synth.log 2>&1
log "synth f16 rc=$? after $(( $(date +%s) - S )) s"
tg() {  # FILE N ENV=VALUE..: tg medians, " / " between depths
  local f=$1 n=$2; shift 2
  env "$@" timeout 150 $W bench -m $f --backend gpu -p 1 -n $n -r 3 --json 2>/dev/null \
    | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))' 2>/dev/null
}
V=(none:X=0 attn:WEBGGUF_X_SKIP=attention qkv:WEBGGUF_X_SKIP=qkv wo:WEBGGUF_X_SKIP=wo,wo_q gu:WEBGGUF_X_SKIP=gate_up,gate_up_q down:WEBGGUF_X_SKIP=down,down_q qx:WEBGGUF_X_SKIP=quantize_x)
for rd in 1 2; do
  if [ $rd = 1 ]; then vs=("${V[@]}"); else vs=(); for ((i=${#V[@]}-1; i>=0; i--)); do vs+=("${V[$i]}"); done; fi
  for v in "${vs[@]}"; do
    l=${v%%:*}; e=${v#*:}
    echo "$rd iq4_xs $l $(tg /tmp/iq.gguf 64 "$e")" | tee -a $R/skip.txt >> $R/pipeline.log
  done
done
log "skip iq done after $(( $(date +%s) - S )) s"
for v in "${V[@]}"; do
  l=${v%%:*}; e=${v#*:}
  echo "1 f16 $l $(tg /tmp/f16.gguf 64 "$e")" | tee -a $R/skip.txt >> $R/pipeline.log
done
rm -f /tmp/f16.gguf
log "skip f16 done after $(( $(date +%s) - S )) s"
tgd() { env "$@" timeout 150 $W bench -m /tmp/iq.gguf --backend gpu --ctx 8448 -p 1 -n 64 -r 3 -d 0,2048,8192 --json 2>/dev/null \
  | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))' 2>/dev/null; }
for v in none:X=0 merge:WEBGGUF_X_SKIP=attention_merge both:WEBGGUF_X_SKIP=attention,attention_merge; do
  l=${v%%:*}; e=${v#*:}
  echo "depth 0/2048/8192 iq4_xs $l $(tgd "$e")" | tee -a $R/depth.txt >> $R/pipeline.log
done
log "depth done after $(( $(date +%s) - S )) s"
for rd in 1 2; do
  for v in $([ $rd = 1 ] && echo "book:X=0 nobook:WEBGGUF_X_NOBOOK=1" || echo "nobook:WEBGGUF_X_NOBOOK=1 book:X=0"); do
    l=${v%%:*}; e=${v#*:}
    echo "$rd iq4_xs $l $(tg /tmp/iq.gguf 64 "$e")" | tee -a $R/book.txt >> $R/pipeline.log
  done
done
env X=0 timeout 120 $W gpu-profile -m /tmp/iq.gguf -n 32 > $R/prof-book.json 2> $R/prof-book.err
env WEBGGUF_X_NOBOOK=1 timeout 120 $W gpu-profile -m /tmp/iq.gguf -n 32 > $R/prof-nobook.json 2> $R/prof-nobook.err
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
