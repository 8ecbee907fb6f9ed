# Sourced by the kit's pipeline.sh (go10.sh patches it in) after its
# benches: uses its wg, lb and mf. Decode at depth on the Q4_K_M files,
# both engines (ours with the context at depth + 256, as llama-bench sizes
# its own, and at 32768); a second pass of ours on the 1B files.
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
  wg d$dep-$s-Q4_K_M-ctx32768 240 bench -m $f --backend gpu --ctx 32768 -p 1 -n 128 -r 3 -d $dep --json
done; done
for q in $QUANTS; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  wg llama-3.2-1b-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
