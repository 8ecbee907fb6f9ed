# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 0, 2,048 and 8,192 on the real-layout 8B Q8_0
# (sbs_depth; the Q4_K_M's is 2026-12-02d's, which no change since reaches), then gpu-profile of the 8B Q8_0 and IQ4_XS for the
# per-kernel bandwidth table.
. $W/sbs-common.sh
sbs_depth llama-3.1-8b-Q8_0
for q in Q8_0 IQ4_XS; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] && wg prof-llama-3.1-8b-$q 120 gpu-profile -m $f -n 32
done
