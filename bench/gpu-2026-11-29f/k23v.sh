#!/usr/bin/env bash
# 2026-11-29f, one short device call (no llama.cpp), carry ['.sbs'] with
# branch wip/k23v's stripped CLI as .sbs/webgguf-k23v.gz: what bounds the
# Q2_K and Q3_K wide decoders (BENCHMARKS.md: 1.43 and 1.22 TB/s on an
# 8B-sized gate/up, "what holds Q3_K near 1.1 TB/s is not known"), by
# elimination. WEBGGUF_K23V picks a timing-only variant of wide.wgsl
# (wrong values from 1 on):
#   0 main; 1 quants (Q3_K: and hmask) as 16-byte loads of the 16-byte
#   word below, 2 or 4 load instructions instead of 8 or 18 (the same
#   cache lines); 2 constant scales (no scale loads or unpacking);
#   3 no quant or hmask loads at all; 4 (Q3_K) no hmask load.
# gpu-profile on the synthetic 8B (every matrix in the type), gate/up =
# 2 x 14,336 x 4,096 weights x 32 layers, each dispatch timed alone;
# two rounds in opposite orders; synthetic Q4_K (main's decoder) beside.
#   bash bench/gpu-2026-11-29f/k23v.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf-k23v
prof() {  # TYPE VARIANT ROUND
  WEBGGUF_K23V=$2 timeout 120 .sbs/webgguf-k23v gpu-profile --synthetic llama-3.1-8b:$1 -n 4 > /tmp/p.json 2>/tmp/p.err || { echo "$3 $1 v$2 failed: $(tail -2 /tmp/p.err)"; return; }
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
t, v, rd = sys.argv[1:4]
bpw = dict(Q2_K=2.625, Q3_K=3.4375, Q4_K=4.5)[t]
d = json.load(open('/tmp/p.json'))
k = {x['kernel']: x['us'] for x in d['kernels_decode']['by_kernel']}
gu = k.get('glu_q', k.get('gate_up', 0.0))
b = 2 * 14336 * 4096 * 32 * bpw / 8
print('%s %-4s v%s gate/up %7.1f us %5.0f GB/s | %s | pass %7.1f' % (rd, t, v, gu, b / gu / 1e3 if gu else 0,
      ' '.join('%s=%.0f' % kv for kv in sorted(k.items())), d['steps']['median_us'].get('gpu_pass') or 0), flush=True)
PY
}
for rd in 1 2; do
  vs="0 1 2 3 4"; [ $rd = 2 ] && vs="4 3 2 1 0"
  for t in Q3_K Q2_K; do
    for v in $vs; do
      [ $t = Q2_K ] && [ $v = 4 ] && continue
      prof $t $v $rd | tee -a $OUT/k23v.txt
    done
  done
  prof Q4_K 0 $rd | tee -a $OUT/k23v.txt
done
