#!/usr/bin/env bash
# 2026-12-01, first call (carry ['.sbs']): the real-layout 8B IQ4_XS side
# by side with llama.cpp CUDA (built on the device: this checkout had no
# .sbs/llama-bin.tgz, so Q4_K_M would not fit the call), main's CLI
# (.sbs/webgguf.gz, c5d3e3a). While llama.cpp builds and quantizes (the
# GPU idle), next.sh A/Bs two few.wgsl variants against main on synthetic
# files: .sbs/rz.gz (rz.patch: the replay's f16 rounding through
# pack2x16float and back, kept from the driver's folding by an xor with a
# zero it cannot see) and .sbs/staged.gz (staged.patch: the grouped
# replay dropped, one step at a time). After the benches extra.sh runs
# both engines at depth 2048 and 8192 on the same file.
#   bash bench/gpu-2026-12-01/go.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf rz staged
