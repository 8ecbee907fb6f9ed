#!/usr/bin/env bash
# The code book by subgroupShuffle (GpuTuning::book_shuffle, on by
# default in this build) on a real-layout file, in one call (carry
# ['.sbs'], ~8 device minutes): llama-3.1-8b IQ4_XS quantized by the kit
# and run side by side with llama.cpp 0c1e570 CUDA (`-fa 1`, the prebuilt);
# next.sh (every gpu:: test of the lib's test binary: the wide and glu_q
# twin tests run the 16-lane lookup there) while it quantizes; extra.sh
# after the benches: ours with and without the shuffles (tg128, two rounds
# in opposite orders), gpu-profile both ways, and tg64 A/Bs on synthetic
# IQ4_XS/IQ4_NL files.
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz and the lib's test binary (cargo test --release --lib
# --no-run) as .sbs/tests-lib.gz; bash bench/sbs-compact.sh.
#   bash bench/gpu-2026-12-02d/book/go.sh 560
set -u
export SHAPES='llama-3.1-8b' QUANTS='IQ4_XS'
H=$(cd "$(dirname "$0")" && pwd)
. "$H"/../../sbs-common.sh
sbs_go "${1:-560}" "$H"/next.sh "$H"/extra.sh webgguf tests-lib
