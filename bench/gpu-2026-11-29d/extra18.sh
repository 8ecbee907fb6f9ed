# Sourced by the kit's pipeline.sh (go18.sh patches it in) after its
# benches: our bench with glu_q off on the 1B Q4_K_M and Q4_0.
for q in Q4_K_M Q4_0; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  export WEBGGUF_GPU_GLU_Q=0
  wg glu0-llama-3.2-1b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  unset WEBGGUF_GPU_GLU_Q
done
