# Sourced by the kit's pipeline.sh (go11.sh patches it in) after its
# benches: uses its wg, lb and mf. Decode at depth on the Q4_K_M files,
# both engines (ours with the context at depth + 256, as llama-bench sizes
# its own); a second pass of ours on the 1B files; then ours with naga's
# loop counters (WEBGGUF_GPU_LOOP_BOUND=1, wgpu's default) on the 8B files,
# an A/B of this session's change on real-layout files.
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done
for q in $QUANTS; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  wg llama-3.2-1b-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
export WEBGGUF_GPU_LOOP_BOUND=1
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg llama-3.1-8b-$q-bound 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
unset WEBGGUF_GPU_LOOP_BOUND
