#!/usr/bin/env bash
# Call 4 of 2026-12-03 (detached by start.sh, results in /tmp/res, carry
# ['.sbs'], no llama.cpp), the CLI of call 3 (wip/q8glu): the smaller
# shapes with the Q8_0 integer floor at 16 MiB (TinyLlama's fused
# gate/up, 23.4 MiB, then takes the integer path; its down, 11.7 MiB,
# does not) against the 24 MiB default, synthetic (in memory), tg64
# medians of 3 (sbs_ab: two rounds in opposite orders).
set -u
R=/tmp/res
. bench/sbs-common.sh
echo "$(date +%T) start" >> $R/pipeline.log
sbs_ab $R/tg.txt "tinyllama-1.1b:Q8_0 smollm2-135m:Q8_0" base:webgguf:X=0 int16:webgguf:WEBGGUF_GPU_INT_MIN_Q8_MIB=16 glu16:webgguf:WEBGGUF_X_Q8GLU=1,WEBGGUF_GPU_INT_MIN_Q8_MIB=16 >> $R/pipeline.log 2>&1
echo "$(date +%T) all done" >> $R/pipeline.log
touch $R/DONE
