#!/usr/bin/env bash
# 2026-11-29h, one short device call (no llama.cpp), carry ['.sbs'] with
# the CLI whose Q2_K and Q3_K quants are planar on the GPU (.sbs/webgguf.gz,
# its library tests as .sbs/tests-lib.gz) and main 00a50ea's CLI
# (.sbs/old.gz): every gpu:: test on the H200; tg64 of the synthetic 8B
# and 1B Q2_K and Q3_K both ways, two rounds in opposite orders (the 1B
# after a warm-up run); pp512 of the 8B both ways (the prefill tile reads
# the same layout); gpu-profile of the 8B both ways.
#   bash bench/gpu-2026-11-29h/planar2.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old tests-lib
sbs_tests $OUT/tests.txt
R=$OUT/planar2.txt
for m in llama-3.2-1b:Q2_K llama-3.2-1b:Q3_K; do sbs_tg .sbs/old $m > /dev/null; done
for rd in 1 2; do
  for m in llama-3.1-8b:Q2_K llama-3.1-8b:Q3_K llama-3.2-1b:Q2_K llama-3.2-1b:Q3_K; do
    bs="old webgguf"; [ $rd = 2 ] && bs="webgguf old"
    for b in $bs; do
      echo "$rd $m $b $(TG_TIMEOUT=60 sbs_tg .sbs/$b $m)" | tee -a $R
    done
  done
done
for t in Q2_K Q3_K; do
  for b in old webgguf; do
    v=$(timeout 90 .sbs/$b bench --backend gpu --synthetic llama-3.1-8b:$t -p 512 -n 1 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["pp_median_tok_s"])' 2>/dev/null)
    echo "pp512 llama-3.1-8b:$t $b ${v:-fail}" | tee -a $R
    timeout 90 .sbs/$b gpu-profile --synthetic llama-3.1-8b:$t -n 16 > $OUT/prof-$t-$b.json 2>&1
  done
done
echo done | tee -a $R
