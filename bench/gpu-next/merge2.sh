#!/usr/bin/env bash
# Prepared for the next session (carry ['.sbs'], ~5 device minutes with the
# start; no llama.cpp): the merge's lanes added in two levels
# (GpuTuning::merge_two_level, c484f33, off by default, never run on a
# GPU) against main's one walk, decode at depth on synthetic 8B and 1B
# files: tg64 after 2,048 and 8,192 keys in one load, two rounds in
# opposite orders; then gpu-profile at 8,192 keys of both (the merge's
# time alone). Turn it on only on these figures (then a real-layout
# check beside llama.cpp: bench/gpu-2026-12-02c/go.sh's extra.sh runs
# depth).
# Before the call, here: cargo build --release; strip and gzip the CLI
# as .sbs/webgguf.gz.
#   bash bench/gpu-next/merge2.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf
S=$(date +%s)
depth() {  # MODEL [ENV=VALUE]: "tok/s at 2048 / at 8192" (tg64 medians)
  local m=$1; shift
  env "$@" timeout 90 .sbs/webgguf bench --backend gpu --synthetic $m --ctx 8448 -p 1 -n 64 -d 2048,8192 -r 3 --json 2>/dev/null \
    | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))'
}
# Variants: main, the merge in two levels, and (the other untried depth
# lead) split.wgsl's two-chunk splits from 2,048 keys instead of 4,096
# (16 splits of 128 keys at 2,048 rather than 32 of 64).
vs=(WEBGGUF_GPU_MERGE2=0 WEBGGUF_GPU_MERGE2=1 WEBGGUF_GPU_DEEP_FAR_KEYS=2048)
for rd in 1 2; do
  order="0 1 2"; [ $rd = 2 ] && order="2 1 0"
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K; do
    for i in $order; do echo "$rd $m ${vs[$i]} $(depth $m ${vs[$i]})" | tee -a $OUT/merge2.txt; done
  done
done
for v in 0 1; do
  WEBGGUF_GPU_MERGE2=$v timeout 60 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-merge2-$v.json 2>/dev/null
  python3 -c "
import json; d=json.load(open('$OUT/prof-merge2-$v.json'))['kernels_decode_at_depth']
print('merge2=$v d8192', ', '.join('%s %.0f' % (x['kernel'], x['us']) for x in d['by_kernel']))" | tee -a $OUT/merge2.txt
done
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/merge2.txt
