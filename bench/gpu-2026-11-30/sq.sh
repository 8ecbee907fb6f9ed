#!/usr/bin/env bash
# 2026-11-30, one short device call, carry ['.sbs']: .sbs/webgguf.gz =
# branch wip/sq (the quantize pass leaves the norm's scale to the
# product: per-block sums of squares), .sbs/old.gz = main 313c4fd's CLI
# (wip/bounds' binary: main plus timing knobs that are off here),
# .sbs/tests-lib.gz = wip/sq's library tests. Every gpu:: test on the
# H200 first, then tg64 both ways, two rounds in opposite orders. Ran
# twice: sq/ (4f80ad8: the block sums loaded in a loop) and sq2/ (the
# loads written out before the rows, summed after them), and sq3/ (the
# loads after the rows, compiled only into products with a norm).
#   bash bench/gpu-2026-11-30/sq.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
sbs_unpack tests-lib
S=$(date +%s)
sbs_tests $OUT/tests.txt
for b in old webgguf; do sbs_tg .sbs/$b llama-3.2-1b:Q4_K > /dev/null; done
sbs_ab $OUT/sq.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.2-1b:Q4_K llama-3.2-1b:IQ4_XS tinyllama-1.1b:Q4_0 smollm2-135m:Q4_0" \
  main:old sq:webgguf
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/sq.txt
