# Sourced by the kit's pipeline.sh (go21.sh patches it in) after its
# benches: the real-layout 8B IQ4_XS with the matvec workgroup memory not
# zeroed, then the default again; greedy ids both ways (must be equal);
# gpu-profile both ways.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  WEBGGUF_GPU_MV_ZERO=0 wg z0-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  wg z1-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  WEBGGUF_GPU_MV_ZERO=0 wg z0b-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  for z in 1 0; do
    WEBGGUF_GPU_MV_ZERO=$z timeout 60 $WG generate --backend gpu -m $f -p "The capital of France is" -n 24 --json > $R/gen-z$z.json 2>&1
  done
  log "greedy ids (zero 1, then 0): $(for z in 1 0; do grep '^{' $R/gen-z$z.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["generated_ids"])'; done | tr '\n' ' ')"
  wg prof-z1-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
  WEBGGUF_GPU_MV_ZERO=0 wg prof-z0-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
fi
