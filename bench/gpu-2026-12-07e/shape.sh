#!/usr/bin/env bash
# 2026-12-07e, one short call on a fresh machine (carry ['.sbs'] with only
# the CLI, as 2026-12-07d):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07e/shape.sh SECONDS
# Whether glu_q's team shape, chosen on the H200 (8x32, 256 threads;
# 2026-11-29d), is what the H100 wants for an 8B's gate/up: Q4_K (1.89
# TB/s there, 2026-12-07d) and Q5_0 (1.99) timed alone by gpu-profile on
# the synthetic llama-3.1-8b with WEBGGUF_GPU_GLU_Q_SHAPE = 8x32 (the
# default, first and last), 8x64, 4x32, 16x32 and 4x64; res/shape.txt has
# "TYPE SHAPE gate_up_q-us TB/s" a line.
set -u
R=/tmp/res
W=.sbs/webgguf
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }
S=$(date +%s)
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
run() {  # TYPE SHAPE BYTES_PER_WEIGHT
  timeout 60 env WEBGGUF_GPU_GLU_Q_SHAPE=$2 $W gpu-profile --synthetic llama-3.1-8b:$1 -n 16 > $R/prof-$1-$2.json 2> $R/prof-$1-$2.err
  local us=$(python3 -c "import json; d=json.load(open('$R/prof-$1-$2.json')); k={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}; g=k.get('gate_up_q'); print('%.0f %.2f' % (g, 2*14336*4096*32*$3/g/1e6) if g else 'no-gate_up_q %s' % sorted(k))" 2>/dev/null)
  echo "$1 $2 ${us:-fail}" >> $R/shape.txt
  log "$1 $2 ${us:-fail} after $(( $(date +%s) - S )) s"
}
for s in 8x32 8x64 4x32 16x32 4x64 8x32; do run Q4_K $s 0.5625; done
for s in 8x32 8x64 4x32; do run Q5_0 $s 0.6875; done
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
