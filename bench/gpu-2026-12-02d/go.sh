#!/usr/bin/env bash
# Prepared for the next session (carry ['.sbs'], ~19 device minutes in two
# calls: `go.sh 560`, then at once `bash .sbs/device.sh SECONDS` to poll):
# the whole matrix, {llama-3.2-1b, llama-3.1-8b} x {Q4_K_M, Q5_K_M, Q6_K,
# IQ4_XS, Q4_0, Q8_0, F16}, side by side with llama.cpp 0c1e570 CUDA
# (`-fa 1`, .sbs/llama-bin.tgz) with main's CLI (the 1B rows then with
# glu_q's 1,024-thread shape, 3219a9b, which 2026-12-02c's matrix
# predates); while llama-quantize runs next.sh runs every gpu:: test
# (.sbs/tests-lib.gz: the merge in two levels and glu_q's NARROW shape have
# run on lavapipe only); after the benches extra.sh runs depth for both
# engines and the depth A/B (the merge in two levels, two-chunk splits
# from 2,048 keys) on the real 8B files. An A/B during the quantizing is
# noise (2026-12-02c), so every A/B is in extra.sh.
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz and the lib's test binary (cargo test --release --lib
# --no-run) as .sbs/tests-lib.gz; bash bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
