#!/usr/bin/env bash
# Call 3 of 2026-12-03 (detached by start.sh on a fresh machine, results
# in /tmp/res, carry ['.sbs'], no llama.cpp), with the timing-only CLI of
# branch wip/q8glu (q8glu.patch on main: WEBGGUF_X_Q8GLU=1 lets Q8_0's
# gate/up take glu_q, which kernels::glu_q_takes skips since 2026-11-29e).
# Q8_0 is the one integer format that keeps two quantize passes a layer
# (2026-12-03 call 2): glu_q would take the one before down, and main_q
# the one before gate/up where Wo takes the integer path
# (WEBGGUF_GPU_INT_MIN_Q8_MIB=16: the 8B's 17.8 MB Wo is under the 24 MiB
# all-Q8_0 threshold). tg64 medians of 3, two rounds in opposite orders,
# synthetic 8B and 1B Q8_0; gpu-profile of base and the best variant.
set -u
R=/tmp/res
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
W=.sbs/webgguf
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
tg() {  # FILE ENV=VALUE..: tg64 median
  local f=$1; shift
  env "$@" timeout 150 $W bench -m $f --backend gpu -p 1 -n 64 -r 3 --json 2>/dev/null \
    | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null
}
G=WEBGGUF_X_Q8GLU=1
V=(base:X=0 glu8:$G glu4:$G,WEBGGUF_GPU_GLU_Q_SHAPE=4x32 glu2:$G,WEBGGUF_GPU_GLU_Q_SHAPE=2x32
   wo16:WEBGGUF_GPU_INT_MIN_Q8_MIB=16 glu8wo:$G,WEBGGUF_GPU_INT_MIN_Q8_MIB=16
   glu4wo:$G,WEBGGUF_GPU_GLU_Q_SHAPE=4x32,WEBGGUF_GPU_INT_MIN_Q8_MIB=16
   glu2wo:$G,WEBGGUF_GPU_GLU_Q_SHAPE=2x32,WEBGGUF_GPU_INT_MIN_Q8_MIB=16)
for m in llama-3.1-8b llama-3.2-1b; do
  $W synth $m:Q8_0 /tmp/m.gguf >> $R/synth.log 2>&1
  log "synth $m rc=$? after $(( $(date +%s) - S )) s"
  for rd in 1 2; do
    if [ $rd = 1 ]; then vs=("${V[@]}"); else vs=(); for ((i=${#V[@]}-1; i>=0; i--)); do vs+=("${V[$i]}"); done; fi
    for v in "${vs[@]}"; do
      l=${v%%:*}; e=${v#*:}
      echo "$rd $m $l $(tg /tmp/m.gguf ${e//,/ })" | tee -a $R/tg.txt >> $R/pipeline.log
    done
  done
  if [ $m = llama-3.1-8b ]; then
    for v in base:X=0 glu8wo:$G,WEBGGUF_GPU_INT_MIN_Q8_MIB=16 glu4wo:$G,WEBGGUF_GPU_GLU_Q_SHAPE=4x32,WEBGGUF_GPU_INT_MIN_Q8_MIB=16; do
      l=${v%%:*}; e=${v#*:}
      env ${e//,/ } timeout 120 $W gpu-profile -m /tmp/m.gguf -n 32 > $R/prof-$l.json 2> $R/prof-$l.err
    done
  fi
  log "$m done after $(( $(date +%s) - S )) s"
done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
