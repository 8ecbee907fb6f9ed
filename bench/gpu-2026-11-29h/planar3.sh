#!/usr/bin/env bash
# Prepared in 2026-11-29h, not yet run (the call was refused for lack of
# device budget). One short device call, carry ['.sbs'] with the CLI of
# branch wip/planar (c2550d9) as .sbs/webgguf.gz and main's as
# .sbs/old.gz: gpu-profile of the synthetic 1B Q2_K both ways (which
# kernel made planar2.sh's 1B 2.4x slower, with b9587b2's decoders), then
# tg64 of the 8B and 1B Q2_K and Q3_K both ways, two rounds in opposite
# orders, after a warm-up of each binary on the 1B.
#   bash bench/gpu-2026-11-29h/planar3.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
for b in old webgguf; do
  timeout 60 .sbs/$b gpu-profile --synthetic llama-3.2-1b:Q2_K -n 8 > $OUT/prof-1b-Q2_K-$b.json 2>&1
  python3 -c "
import json
d=json.load(open('$OUT/prof-1b-Q2_K-$b.json'))
print('$b', d['wall_per_step'], ', '.join('%s %.0f'%(k['kernel'],k['us']) for k in d['kernels_decode']['by_kernel']))
" | tee -a $OUT/prof.txt
done
for b in old webgguf; do sbs_tg .sbs/$b llama-3.2-1b:Q2_K > /dev/null; done
sbs_ab $OUT/planar3.txt "llama-3.1-8b:Q2_K llama-3.1-8b:Q3_K llama-3.2-1b:Q2_K llama-3.2-1b:Q3_K" main:old planar:webgguf
echo done | tee -a $OUT/planar3.txt
