#!/usr/bin/env bash
# Call 2 of 2026-12-03 (detached by start.sh on a fresh machine, results
# in /tmp/res, carry ['.sbs'], no llama.cpp), with the timing-only CLI of
# branch wip/skip (skip.patch). What each kernel group costs *in the
# stream* (tg64 with it against tg64 without it) on synthetic 8B files in
# Q4_K, Q6_K and Q8_0 (every matrix in that type, the LM head too), two
# rounds in opposite orders; then gpu-profile of each, for the same
# groups timed alone.
set -u
R=/tmp/res
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
W=.sbs/webgguf
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
tg() {  # FILE N ENV=VALUE..: tg median
  local f=$1 n=$2; shift 2
  env "$@" timeout 150 $W bench -m $f --backend gpu -p 1 -n $n -r 3 --json 2>/dev/null \
    | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))' 2>/dev/null
}
V=(none:X=0 attn:WEBGGUF_X_SKIP=attention qkv:WEBGGUF_X_SKIP=qkv wo:WEBGGUF_X_SKIP=wo,wo_q gu:WEBGGUF_X_SKIP=gate_up,gate_up_q down:WEBGGUF_X_SKIP=down,down_q lm:WEBGGUF_X_SKIP=lm_head)
for q in Q4_K Q6_K Q8_0; do
  $W synth llama-3.1-8b:$q /tmp/m.gguf >> $R/synth.log 2>&1
  log "synth $q rc=$? after $(( $(date +%s) - S )) s"
  for rd in 1 2; do
    if [ $rd = 1 ]; then vs=("${V[@]}"); else vs=(); for ((i=${#V[@]}-1; i>=0; i--)); do vs+=("${V[$i]}"); done; fi
    for v in "${vs[@]}"; do
      l=${v%%:*}; e=${v#*:}
      echo "$rd $q $l $(tg /tmp/m.gguf 64 "$e")" | tee -a $R/skip.txt >> $R/pipeline.log
    done
  done
  timeout 120 $W gpu-profile -m /tmp/m.gguf -n 32 > $R/prof-$q.json 2> $R/prof-$q.err
  log "$q done after $(( $(date +%s) - S )) s"
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
