#!/usr/bin/env bash
# Prepared for the next session's first device call (~9 minutes, one
# call then one poll; carry ['.sbs'] with .sbs/webgguf.gz built from main
# and .sbs/llama-bin.tgz, the prebuilt llama.cpp (bench/llama-prebuilt.md);
# without it llama.cpp builds on the device and only QUANTS='IQ4_XS'
# fits): the real-layout 8B IQ4_XS (0.90x with main_q, 2026-12-02b) and
# Q4_K_M side by side with llama.cpp CUDA, and the down product writing
# the next layer's q/k/v x (GpuTuning::down_q, off by default, never run
# on a GPU) against main's default. next.sh runs every gpu:: test
# (.sbs/tests-lib.gz: the 2x64 main_q case has run on lavapipe only) and
# A/Bs down_q on synthetic files while llama-quantize runs; extra.sh A/Bs
# it on the real files after the benches.
#   bash bench/gpu-next/go.sh SECONDS    (then at once, to poll:
#   bash .sbs/device.sh SECONDS; the tool lets an idle machine go in 30 s)
# Before the call, here: cargo build --release; strip and gzip the CLI
# as .sbs/webgguf.gz and the lib's test binary as .sbs/tests-lib.gz; bash
# bench/sbs-compact.sh (the carry's room).
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS Q4_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-555}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
