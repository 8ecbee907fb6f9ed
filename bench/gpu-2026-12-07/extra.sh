# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B Q8_0 (sbs_depth),
# then gpu-profile of it for the per-kernel bandwidth table.
. $W/sbs-common.sh
sbs_depth llama-3.1-8b-Q8_0
f=$(mf llama-3.1-8b-Q8_0)
[ -n "$f" ] && wg prof-llama-3.1-8b-Q8_0 120 gpu-profile -m $f -n 32
