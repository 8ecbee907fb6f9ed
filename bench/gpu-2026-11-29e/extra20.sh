# Sourced by the kit's pipeline.sh (go20.sh patches it in) after its
# benches: the real-layout 8B IQ4_XS with main's binary and each code-book
# layout, then gpu-profile with the default layout and with 8x2.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  for c in base 8x2 1x2 32x1 8x1 32x2 4x2; do
    if [ $c = base ]; then
      WG=$W/webgguf-base wg base-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
    else
      export WEBGGUF_GPU_CODE_BOOK=$c
      wg cb$c-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
      unset WEBGGUF_GPU_CODE_BOOK
    fi
  done
  wg prof-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
  export WEBGGUF_GPU_CODE_BOOK=8x2
  wg prof8x2-llama-3.1-8b-IQ4_XS 100 gpu-profile -m $f -n 16
  unset WEBGGUF_GPU_CODE_BOOK
fi
