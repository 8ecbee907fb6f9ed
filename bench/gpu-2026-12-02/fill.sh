#!/usr/bin/env bash
# 2026-12-02, second machine (carry ['.sbs']): wide.wgsl's code-book fill
# with two iq4_bytes calls a thread (.sbs/webgguf.gz, main 89b4bef plus
# that change) against main (.sbs/base.gz). The kit quantizes the
# real-layout 8B IQ4_XS and runs llama-bench and the new binary on it;
# meanwhile fill-next.sh A/Bs tg64 on synthetic files; after the benches
# fill-extra.sh runs both binaries on the real file, interleaved.
#   bash bench/gpu-2026-12-02/fill.sh SECONDS
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/fill-next.sh "$H"/fill-extra.sh webgguf base
