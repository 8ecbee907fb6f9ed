#!/usr/bin/env bash
# One short call (carry ['.sbs'], no llama.cpp): (1) the code book by
# subgroupShuffle (branch wip/shfl, `WEBGGUF_X_SHFL=1`: IQ4_NL's 16 values
# held in lanes' registers, 8 shuffles a quant word, instead of 4 reads of
# the 256-entry byte table in workgroup memory) against main's table on
# synthetic IQ4_XS files: the logits of both, which must be equal (the
# same int8 values either way), tg64 two rounds in opposite orders, and
# gpu-profile of the 8B with it; (2) small.sh (the smaller shapes against
# the CLI of c197acf, before issue 12's first commit).
# Before the call, here: wip/shfl's CLI (main 3ac30d1 + the experiment;
# without the variable it is main) as .sbs/webgguf.gz, c197acf's as
# .sbs/webgguf-old.gz.   bash bench/gpu-2026-12-02d/shfl/go.sh
set -u
. bench/sbs-common.sh
sbs_short webgguf webgguf-old
R=$OUT/shfl.txt
for m in llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS; do
  for v in 0 1; do
    WEBGGUF_X_SHFL=$v timeout 120 .sbs/webgguf logits --synthetic $m --backend gpu --tokens 1,2,3,4,5,6,7,8,9,10,11,12 --start 0 --top 5 --json 2>/dev/null | grep '^{' > $OUT/logits-$m-$v.json
  done
  if cmp -s $OUT/logits-$m-0.json $OUT/logits-$m-1.json && [ -s $OUT/logits-$m-0.json ]; then echo "logits $m equal" | tee -a $R
  else echo "logits $m DIFFER" | tee -a $R; fi
done
sbs_ab $R "llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS" main:webgguf shfl:webgguf:WEBGGUF_X_SHFL=1
for v in 0 1; do
  WEBGGUF_X_SHFL=$v timeout 120 .sbs/webgguf gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 > $OUT/prof-8b-iq4xs-$v.json 2>&1
done
bash bench/gpu-2026-12-02d/small/small.sh
