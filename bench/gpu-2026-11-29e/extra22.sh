# Sourced by the kit's pipeline.sh (go22.sh patches it in) after its
# benches (the default layout, 1x1): the real-layout 8B IQ4_XS with the
# nibble tables, 1x1 again, 32x0 again; greedy ids 1x1 and 32x0; profiles.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  for c in 32x0 16x0 1x1 32x0; do
    WEBGGUF_GPU_CODE_BOOK=$c wg cb$c-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  done
  for c in 1x1 32x0; do
    WEBGGUF_GPU_CODE_BOOK=$c timeout 60 $WG generate --backend gpu -m $f -p "The capital of France is" -n 24 --json > $R/gen-$c.json 2>&1
  done
  log "greedy ids (1x1, then 32x0): $(for c in 1x1 32x0; do grep '^{' $R/gen-$c.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["generated_ids"])'; done | tr '\n' ' ')"
  WEBGGUF_GPU_CODE_BOOK=1x1 wg prof1x1-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
  WEBGGUF_GPU_CODE_BOOK=32x0 wg prof32x0-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
fi
