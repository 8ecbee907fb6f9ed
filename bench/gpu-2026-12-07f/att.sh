#!/usr/bin/env bash
# NOT RUN: written in 2026-12-07f for a fourth call, which the session's
# device time did not cover (ready for the next; carry ['.sbs'] with a
# CLI of main 85b782e or later, `bash bench/gpu-2026-12-03/start.sh
# bench/gpu-2026-12-07f/att.sh 150` on a fresh machine). The question:
# whether the products read slower after any deep attention or after
# split.wgsl's: gpu-profile -d 8192 of the synthetic
# 8B Q4_K with split.wgsl (default), with attention.wgsl's `split` in its
# place (WEBGGUF_GPU_DEEP_KEYS=0: the same cache read, another kernel,
# ~5x slower), and with split.wgsl's near tier only (FAR_KEYS=0).
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
prof() { # LABEL [VAR=VALUE..]
  local l=$1; shift
  log "profile $l begin"
  env "$@" timeout 90 $W gpu-profile --synthetic llama-3.1-8b:Q4_K -n 16 -d 8192 > $R/prof-Q4_K-d8192-$l.json 2> $R/prof.err
  log "profile $l rc=$? after $(( $(date +%s) - S )) s"
}
prof split
prof old WEBGGUF_GPU_DEEP_KEYS=0
prof near WEBGGUF_GPU_DEEP_FAR_KEYS=0
prof split2
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
