#!/usr/bin/env bash
# Prepared for a next session (carry ['.sbs'], ~6 device minutes with the
# start; no llama.cpp): the shapes chosen for the code book's table, now
# that its lookups are subgroup shuffles (2026-12-02d, f1e4893) with no
# fill and no workgroup memory: glu_q's teams on the code-book formats
# (8x32 main; 4x32, 2x32, 16x32), and 64-thread plain products
# (WEBGGUF_GPU_MV_WG=64), tg64 on synthetic IQ4_XS/IQ4_NL files, two rounds
# in opposite orders (book-shapes.txt). A shape that gains goes to the
# real-layout 8B IQ4_XS side by side next (bench/gpu-2026-12-02d/book's
# go.sh is that call's template).
# Before the call, here: cargo build --release; strip and gzip the CLI as
# .sbs/webgguf.gz.   bash bench/gpu-next/book-shapes.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
S=$(date +%s)
sbs_ab $OUT/book-shapes.txt "llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS llama-3.1-8b:IQ4_NL" \
  main:webgguf glu4x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=4x32 glu2x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=2x32 \
  glu16x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=16x32 wg64:webgguf:WEBGGUF_GPU_MV_WG=64
echo "book-shapes after $(( $(date +%s) - S )) s"
