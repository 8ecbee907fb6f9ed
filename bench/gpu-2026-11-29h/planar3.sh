#!/usr/bin/env bash
# 2026-11-29h, the last device seconds: gpu-profile of the synthetic 1B
# Q2_K with the planar CLI (.sbs/webgguf.gz, wip/planar b9587b2) and main's
# (.sbs/old.gz), to see which kernel makes planar2.sh's 1B 2.4x slower.
#   bash bench/gpu-2026-11-29h/planar3.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf old
for b in old webgguf; do
  timeout 40 .sbs/$b gpu-profile --synthetic llama-3.2-1b:Q2_K -n 8 > $OUT/prof-1b-Q2_K-$b.json 2>&1
  python3 -c "
import json
d=json.load(open('$OUT/prof-1b-Q2_K-$b.json'))
print('$b', d['wall_per_step'], ', '.join('%s %.0f'%(k['kernel'],k['us']) for k in d['kernels_decode']['by_kernel']))
"
done
