#!/usr/bin/env bash
# Call 1 of 2026-12-02e (detached by start.sh, results in /tmp/res, carry
# ['.sbs'], no llama.cpp): (a) the 8B F16's small products by shape on
# the H200 (gpu-profile of a synthetic 8B F16 written once, per variant:
# q/k/v and Wo read 1.9 TB/s against gate/up's 3.4, 2026-12-02; the shape
# sweep of 2026-11-26e ran on the H100, q/k/v only); (b) tg128 of those
# variants, two rounds in opposite orders; (c) bench/gpu-next/book-shapes.sh
# (the code book's table-era shapes with the shuffles).
set -u
R=/tmp/res
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
W=.sbs/webgguf
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
$W synth llama-3.1-8b:F16 /tmp/f16.gguf > $R/synth.log 2>&1
log "synth rc=$? after $(( $(date +%s) - S )) s"
V=(def:X=0 rows001:WEBGGUF_GPU_MV_ROWS=0,0,1 rows804:WEBGGUF_GPU_MV_ROWS=8,0,4 wg256:WEBGGUF_GPU_MV_WG=256 wg64:WEBGGUF_GPU_MV_WG=64)
for v in "${V[@]}"; do
  l=${v%%:*}; e=${v#*:}
  env "$e" timeout 120 $W gpu-profile -m /tmp/f16.gguf -n 32 > $R/prof-f16-$l.json 2> $R/prof-f16-$l.err
  log "profile $l rc=$?"
done
tg() { env "$2" timeout 120 $W bench -m /tmp/f16.gguf --backend gpu -p 1 -n 128 -r 3 --json 2>/dev/null \
  | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null; }
for rd in 1 2; do
  vs=("${V[@]}"); [ $rd = 2 ] && vs=(wg64:WEBGGUF_GPU_MV_WG=64 wg256:WEBGGUF_GPU_MV_WG=256 rows804:WEBGGUF_GPU_MV_ROWS=8,0,4 rows001:WEBGGUF_GPU_MV_ROWS=0,0,1 def:X=0)
  for v in "${vs[@]}"; do
    l=${v%%:*}; e=${v#*:}
    echo "$rd f16 $l $(tg x "$e")" | tee -a $R/f16-tg.txt >> $R/pipeline.log
  done
done
rm -f /tmp/f16.gguf
log "f16 done after $(( $(date +%s) - S )) s"
# (book-shapes.sh moved to bench/gpu-2026-12-02e/ after this call)
OUT=$R bash bench/gpu-next/book-shapes.sh >> $R/pipeline.log 2>&1
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
