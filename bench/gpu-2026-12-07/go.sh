#!/usr/bin/env bash
# 2026-12-07 (carry ['.sbs']): the real-layout Q8_0 files, 1B and 8B,
# side by side with llama.cpp 0c1e570 CUDA (`-fa 1`) for the first time
# since Q8_0's integer path landed (27a8139: the 16 MiB floor, glu_q in
# 2-row teams), main 27a8139's CLI. Not the whole matrix, nor the
# Q4_K_M control first planned: refused starts left 16 device minutes
# this session, and llama.cpp builds on the device (~250 s; the prebuilt
# .sbs/llama-bin.tgz is lost with each fresh checkout), so the run is
# cut to fit one call. next.sh runs every gpu:: test meanwhile where
# .sbs/tests-lib.gz is carried (the benches wait for it: ~170 s, which
# the last minutes of device time could not spare, so it was left out);
# extra.sh, after the benches, runs depth for both engines on the 8B
# Q8_0 and gpu-profile of it.
# First call `go.sh 550`, then `bash .sbs/device.sh 540` on the same
# machine until DONE.
# Before the call, here: cargo build --release; the kit's prepare.sh
# (its llama.cpp source fetched by hand: bench/llama-prebuilt.md); the
# CLI stripped and gzipped as .sbs/webgguf.gz, the lib's test binary
# (cargo test --release --lib --no-run) as .sbs/tests-lib.gz;
# bash bench/sbs-compact.sh.
set -u
export SHAPES='llama-3.2-1b llama-3.1-8b' QUANTS='Q8_0'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../sbs-common.sh
bins=webgguf
[ -f .sbs/tests-lib.gz ] && bins="$bins tests-lib"
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh $bins
