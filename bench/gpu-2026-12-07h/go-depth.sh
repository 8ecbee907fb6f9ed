#!/usr/bin/env bash
# 2026-12-07h, depth side by side (carry ['.sbs'] with .sbs/llama-bin.tgz
# and this tree's CLI): `bash bench/gpu-2026-12-07h/go-depth.sh 560`, then
# `bash .sbs/device.sh 540` on the same machine until DONE. The kit's
# pipeline on the real-layout 8B files only (SHAPES, QUANTS below), then
# extra-depth.sh: both engines' tg128 at depth 0, 2048 and 8192
# (sbs_depth), ours with split_sg.wgsl (SG) and with split.wgsl.
set -u
export SHAPES="${SHAPES:-llama-3.1-8b}" QUANTS="${QUANTS:-Q4_K_M Q8_0 IQ4_XS}"
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next-none.sh "$H"/extra-depth.sh webgguf
