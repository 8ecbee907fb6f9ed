#!/usr/bin/env bash
# 2026-12-02b, second call (carry ['.sbs']; the first machine was gone):
# the kit quantizes the real-layout 8B IQ4_XS and Q4_K_M again and runs
# llama-bench and the default binary on them; meanwhile next2.sh A/Bs
# main_q's team shapes on the synthetic 8B IQ4_XS; after the benches
# extra2.sh A/Bs them on the real files (workgroups of up to 1024
# threads: MainQShape::valid takes the device's limit).
#   bash bench/gpu-2026-12-02b/go2.sh SECONDS   (then again to poll)
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS Q4_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next2.sh "$H"/extra2.sh webgguf
