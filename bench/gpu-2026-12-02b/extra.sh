# Sourced by the kit's pipeline after its benches (go.sh): on the
# real-layout 8B IQ4_XS main_q off against the default (on), tg128,
# interleaved twice, llama-bench again, and gpu-profile both ways; on the
# Q4_K_M off against all.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  for i in 1 2; do
    WEBGGUF_GPU_WO_Q=0 wg off-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
    wg book-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
  done
  lb again-llama-3.1-8b-IQ4_XS 60 -m $f -ngl 99 -p 0 -n 128 -r 5 -fa 1
  WEBGGUF_GPU_WO_Q=0 wg prof-off 60 gpu-profile -m $f -n 32
  wg prof-book 60 gpu-profile -m $f -n 32
fi
f=$(mf llama-3.1-8b-Q4_K_M)
if [ -n "$f" ]; then
  for i in 1 2; do
    WEBGGUF_GPU_WO_Q=0 wg k-off-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
    WEBGGUF_GPU_WO_Q=all wg k-all-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
  done
fi
