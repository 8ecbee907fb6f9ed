# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B Q4_K_M, IQ4_XS and
# Q8_0 (sbs_depth), then gpu-profile of the 8B IQ4_XS and Q8_0.
. $W/sbs-common.sh
sbs_depth llama-3.1-8b-Q4_K_M llama-3.1-8b-IQ4_XS llama-3.1-8b-Q8_0
for q in IQ4_XS Q8_0; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] && wg prof-llama-3.1-8b-$q 120 gpu-profile -m $f -n 32
done
