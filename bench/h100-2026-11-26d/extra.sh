# Sourced by the kit's pipeline.sh (go.sh patches it in) after its benches:
# uses its wg, lb and mf. Profiles of every 8B file (the kit profiles
# Q4_K_M), of the 8B Q4_K_M at 8192 keys, and decode at depth on both
# engines (Q4_K_M of both shapes, and Q4_0).
for s in $SHAPES; do for q in $QUANTS; do
  [ $q = Q4_K_M ] || [ $s = llama-3.2-1b ] && continue
  f=$(mf $s-$q); [ -n "$f" ] && wg prof-$s-$q 200 gpu-profile -m $f -n 32
done; done
f=$(mf llama-3.1-8b-Q4_K_M); [ -n "$f" ] && wg prof-d8192-llama-3.1-8b-Q4_K_M 200 gpu-profile -m $f -n 8 -d 8192
for s in $SHAPES; do for q in Q4_K_M Q4_0; do f=$(mf $s-$q); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-$q 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-$q 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done; done
