#!/usr/bin/env bash
# 2026-12-02c, call 3 (carry ['.sbs'], a fresh machine, no llama.cpp):
# glu_q in 1,024-thread workgroups (2x32) against main's 8x32 on synthetic
# TinyLlama files (2,048 wide, 5,632 FFN: the issue bounds the smaller
# shapes' regressions at 3%) and the synthetic llama-3.2-1b Q4_K (beside
# call 2's real-layout +4.8%), tg64, two rounds in opposite orders, on a
# quiet machine (call 2's synthetic A/B ran during the quantizing).
#   bash bench/gpu-2026-12-02c/glu.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
sbs_ab $OUT/glu-syn.txt "tinyllama-1.1b:Q4_K tinyllama-1.1b:Q4_0 llama-3.2-1b:Q4_K" \
  main:webgguf glu2x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=2x32
