#!/usr/bin/env bash
# 2026-12-02b (carry ['.sbs']): the Wo product writing the gate/up
# product's int8 x (matvec.wgsl's main_q, GpuTuning::wo_q) on the H200.
# One binary (.sbs/webgguf.gz, the working tree with main_q), its
# variants by WEBGGUF_GPU_WO_Q (0: off, book: the code-book formats, the
# default; all) and WEBGGUF_GPU_WO_Q_SHAPE. The kit quantizes the
# real-layout 8B IQ4_XS and Q4_K_M and runs llama-bench and the default
# on both; meanwhile next.sh runs every gpu:: test (.sbs/tests-lib.gz)
# and A/Bs tg64 on synthetic files; after the benches extra.sh runs the
# variants on the real files, interleaved, beside llama-bench again.
#   bash bench/gpu-2026-12-02b/go.sh SECONDS   (then again to poll)
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz and the lib's test binary as .sbs/tests-lib.gz.
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS Q4_K_M'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
