#!/usr/bin/env bash
# 2026-12-07 (third session; carry ['.sbs'], ~19 device minutes in two
# calls: `go.sh 560`, then at once `bash .sbs/device.sh 540` on the same
# machine): the whole matrix, {llama-3.2-1b, llama-3.1-8b} x {Q4_K_M,
# Q5_K_M, Q6_K, IQ4_XS, Q4_0, Q8_0, F16}, side by side with llama.cpp
# 0c1e570 CUDA (`-fa 1`, .sbs/llama-bin.tgz) in one run on main's CLI
# (HEAD~1 of this script's commit: 27a8139's kernels, with the code book by
# subgroupShuffle, f1e4893, and Q8_0's integer path, 27a8139, which
# 2026-12-02d's matrix predates; since then only the subgroup directive by
# backend and BOOK_HI's fill guarded, no change of what runs); 2026-12-07's next.sh
# runs every gpu:: test while llama-quantize runs; extra.sh, after the
# benches, runs depth for both engines on the 8B Q4_K_M, IQ4_XS and Q8_0
# and gpu-profile of the 8B IQ4_XS and Q8_0 (the kit profiles the
# Q4_K_M files).
# Before the call, here: cargo build --release; the CLI stripped and
# gzipped as .sbs/webgguf.gz, the lib's test binary (cargo test --release
# --lib --no-run) as .sbs/tests-lib.gz; bash bench/sbs-compact.sh.
set -u
# SHAPES and QUANTS from the caller cut the run where device time is short.
export SHAPES="${SHAPES:-llama-3.2-1b llama-3.1-8b}" QUANTS="${QUANTS:-Q4_K_M Q5_K_M Q6_K IQ4_XS Q4_0 Q8_0 F16}"
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
bins=webgguf
[ -f .sbs/tests-lib.gz ] && bins="$bins tests-lib"
sbs_go "${1:-560}" "$H"/../gpu-2026-12-07/next.sh "$H"/extra.sh $bins
