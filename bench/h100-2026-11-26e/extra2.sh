# Sourced by the kit's pipeline.sh after its benches (go2.sh): decode at
# depth on the Q4_K_M files, both engines.
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done
