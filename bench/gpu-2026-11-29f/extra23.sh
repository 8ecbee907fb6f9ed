# Sourced by the kit's pipeline.sh (go23.sh patches it in) after its
# benches: the real-layout 8B Q3_K_M with main's binary before the change
# (base), then gpu-profile with both.
f=$(mf llama-3.1-8b-Q3_K_M)
if [ -n "$f" ]; then
  WG=$W/webgguf-base wg base-llama-3.1-8b-Q3_K_M 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  wg prof-llama-3.1-8b-Q3_K_M 100 gpu-profile -m $f -n 16
  WG=$W/webgguf-base wg profbase-llama-3.1-8b-Q3_K_M 100 gpu-profile -m $f -n 16
fi
