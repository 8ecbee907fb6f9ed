#!/usr/bin/env bash
# The template of a whole-matrix call (ran as 2026-12-02d; carry ['.sbs'],
# ~18 device minutes in two calls: `go.sh 560`, then at once
# `bash .sbs/device.sh SECONDS` to poll): the whole matrix,
# {llama-3.2-1b, llama-3.1-8b} x {Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, Q4_0,
# Q8_0, F16}, side by side with llama.cpp 0c1e570 CUDA (`-fa 1`,
# .sbs/llama-bin.tgz) with main's CLI; while llama-quantize runs next.sh
# runs every gpu:: test (.sbs/tests-lib.gz); after the benches extra.sh
# runs depth for both engines on the real 8B files, and any A/B (one
# during the quantizing is noise, 2026-12-02c).
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz and the lib's test binary (cargo test --release --lib
# --no-run) as .sbs/tests-lib.gz; bash bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
