#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI of this change as .sbs/webgguf.gz, 8944a9d's (before
# row_norm.wgsl) as .sbs/old.gz and the library tests as .sbs/tests-lib.gz:
# the glu_q and code-book tests on the H200; glu_q's code book by triples
# (WEBGGUF_GPU_BOOK3=1, wide.wgsl's IQ4T) against pairs (=0) on the
# synthetic 8B IQ4_XS and IQ4_NL, and 8944a9d against this binary with
# pairs on the 8B IQ4_XS and Q4_K (row_norm.wgsl's quantize pass), tg64
# medians, two rounds in opposite orders; then gpu-profile of the 8B
# IQ4_XS both ways. Also triples with glu_q's 16x64 shape (more rows a
# workgroup for one fill; it lost 2.6% with pairs, 2026-11-29d).
#   bash bench/gpu-2026-11-29h/book3.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old tests-lib
R=$OUT/book3.txt
.sbs/tests-lib --test-threads 1 gpu::tests::glu_q gpu::tests::book_triples gpu::tests::wide_int 2>&1 \
  | grep -E "^test |test result|panicked|SKIPPED" | cut -c1-300 | tee $OUT/tests.txt
for rd in 1 2; do
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    os="0 1"; [ $rd = 2 ] && os="1 0"
    for o in $os; do
      echo "$rd $m book3=$o $(TG_TIMEOUT=60 WEBGGUF_GPU_BOOK3=$o sbs_tg .sbs/webgguf $m)" | tee -a $R
    done
  done
  m=llama-3.1-8b:IQ4_XS
  echo "$rd $m book3=1 shape=16x64 $(TG_TIMEOUT=60 WEBGGUF_GPU_GLU_Q_SHAPE=16x64 sbs_tg .sbs/webgguf $m)" | tee -a $R
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K; do
    bs="old webgguf"; [ $rd = 2 ] && bs="webgguf old"
    for b in $bs; do
      echo "$rd $m $b book3=0 $(TG_TIMEOUT=60 WEBGGUF_GPU_BOOK3=0 sbs_tg .sbs/$b $m)" | tee -a $R
    done
  done
done
for o in 1 0; do
  WEBGGUF_GPU_BOOK3=$o timeout 90 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 > $OUT/prof-IQ4_XS-book3-$o.json 2>&1
done
echo done | tee -a $R
