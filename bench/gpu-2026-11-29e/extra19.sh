# Sourced by the kit's pipeline.sh (go19.sh patches it in) after its
# benches: our bench again with glu_q off on each file, then gpu-profile
# of each.
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  export WEBGGUF_GPU_GLU_Q=0
  wg glu0-llama-3.1-8b-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  unset WEBGGUF_GPU_GLU_Q
done
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 100 gpu-profile -m $f -n 16
done
