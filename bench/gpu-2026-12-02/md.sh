#!/usr/bin/env bash
# 2026-12-02, fourth machine (carry ['.sbs']): the merge's dimensions a
# workgroup as a constant of its pipeline (.sbs/webgguf.gz: attention.wgsl's
# MD, so that the loops over the merge's lanes have a constant trip
# count) against main (.sbs/base.gz, 89b4bef), decode at depth on
# synthetic 8B files: tg64 after 2,048 and 8,192 keys in one load, two
# rounds in opposite orders; then gpu-profile at 8,192 keys of both.
#   bash bench/gpu-2026-12-02/md.sh
set -u
. bench/sbs-common.sh
sbs_short base webgguf
S=$(date +%s)
depth() {  # BINARY MODEL: "tok/s at 2048 / at 8192" (tg64 medians)
  timeout 90 .sbs/$1 bench --backend gpu --synthetic $2 --ctx 8448 -p 1 -n 64 -d 2048,8192 -r 3 --json 2>/dev/null \
    | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))'
}
for rd in 1 2; do
  order="base webgguf"; [ $rd = 2 ] && order="webgguf base"
  for m in llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_XS; do
    for b in $order; do echo "$rd $m $b $(depth $b $m)" | tee -a $OUT/md.txt; done
  done
done
for b in base webgguf; do
  timeout 60 .sbs/$b gpu-profile --synthetic llama-3.1-8b:Q4_K -n 8 -d 8192 > $OUT/prof-$b.json 2>/dev/null
  python3 -c "
import json; d=json.load(open('$OUT/prof-$b.json'))['kernels_decode_at_depth']
print('$b d8192', ', '.join('%s %.0f' % (x['kernel'], x['us']) for x in d['by_kernel']))" | tee -a $OUT/md.txt
done
echo "done after $(( $(date +%s) - S )) s" | tee -a $OUT/md.txt
