# Sourced by the kit's pipeline.sh (go17.sh patches it in) after its
# benches: our bench again on each file with glu_q off (the quantize pass
# before each down product), then gpu-profile of each file but Q4_K_M
# (which the pipeline profiles itself).
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  export WEBGGUF_GPU_GLU_Q=0
  wg glu0-llama-3.1-8b-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  unset WEBGGUF_GPU_GLU_Q
done
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] && [ $q != Q4_K_M ] || continue
  wg prof-llama-3.1-8b-$q 100 gpu-profile -m $f -n 16
done
