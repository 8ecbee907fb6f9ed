# Sourced by the kit's pipeline.sh (go16.sh patches it in) after its
# benches; uses its wg, lb and mf. Decode at depth on the real-layout
# Q4_K_M files at 2048, 4096 and 8192 keys, both engines (ours with the
# context at depth + 256, as llama-bench sizes its own); gpu-profile of the
# 8B Q4_K_M at 8192 keys (attention's share at depth); gpu-profile of every
# 8B file but Q4_K_M (the kit profiles it): the per-kernel bandwidth; then
# a second pass of ours over the 1B files (the first 1B run of a process
# has read low before).
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 4096 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done
f=$(mf llama-3.1-8b-Q4_K_M); [ -n "$f" ] && wg prof-d8192-llama-3.1-8b-Q4_K_M 200 gpu-profile -m $f -n 4 -d 8192
for q in $QUANTS; do
  [ $q = Q4_K_M ] && continue
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
done
for q in $QUANTS; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  wg llama-3.2-1b-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
