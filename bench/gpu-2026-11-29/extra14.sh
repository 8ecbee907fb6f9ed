# Sourced by the kit's pipeline.sh (go14.sh patches it in) after its
# benches: uses its wg, lb and mf. Decode at depth on the Q4_K_M files,
# both engines (ours with the context at depth + 256, as llama-bench sizes
# its own), and wip/chunks' CLI with next14.sh's best chunks a split where
# that beat one chunk (label suffix -alt); gpu-profile of every 8B file
# (real-layout gate/up bandwidth).
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
  best=$(cat $R/deep-best-$s 2>/dev/null)
  if [ -n "$best" ]; then
    WG=$W/webgguf-wip WEBGGUF_GPU_DEEP_SHAPE=$best wg d$dep-$s-Q4_K_M-alt 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
  fi
done; done
for q in $QUANTS; do
  [ $q = Q4_K_M ] && continue   # the kit profiles it
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
done
