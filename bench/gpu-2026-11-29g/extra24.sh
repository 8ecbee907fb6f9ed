# Sourced by the kit's pipeline.sh (go24.sh and go25.sh patch it in) after its
# benches: our bench on the glu_q files with the quantize pass before
# gate/up (WEBGGUF_GPU_OWN_X=0), then again with the default, in that
# order, so that each file has both within seconds.
for q in Q4_K_M IQ4_XS Q4_0 Q5_K_M Q6_K; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  export WEBGGUF_GPU_OWN_X=0
  wg pass-llama-3.2-1b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  unset WEBGGUF_GPU_OWN_X
  wg own-llama-3.2-1b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
