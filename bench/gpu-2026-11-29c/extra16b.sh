# Sourced by the kit's pipeline.sh (go16b.sh patches it in) after its
# benches: gpu-profile of each 8B file (per-kernel bandwidth).
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 100 gpu-profile -m $f -n 16
done
