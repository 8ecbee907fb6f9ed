#!/usr/bin/env bash
# 2026-12-07b (carry ['.sbs'], `go.sh 560`, then at once `bash
# .sbs/device.sh 540` on the same machine until DONE): the files that
# main's changes since the last whole matrix (2026-12-02d) touch, side by
# side with llama.cpp 0c1e570 CUDA (`-fa 1`, .sbs/llama-bin.tgz), with
# main 27a8139's CLI: {llama-3.2-1b, llama-3.1-8b} x {IQ4_XS (the code
# book by subgroupShuffle, f1e4893), Q8_0 (its integer path, 27a8139)}.
# Not the whole matrix, nor a Q4_K_M control: seven refused machine
# starts had left ~20 device minutes, and the matrix takes ~19 of them
# when the first start succeeds. next.sh runs
# every gpu:: test while llama-quantize runs; extra.sh, after the
# benches, runs depth for both engines on the 8B Q8_0 and gpu-profile of
# the 8B Q8_0 and IQ4_XS (the kit would profile Q4_K_M files; none here).
# Before the call, here: cargo build --release; the CLI stripped and
# gzipped as .sbs/webgguf.gz, the lib's test binary (cargo test
# --release --lib --no-run) as .sbs/tests-lib.gz; bash bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q8_0 IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
bins=webgguf
[ -f .sbs/tests-lib.gz ] && bins="$bins tests-lib"
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh $bins
