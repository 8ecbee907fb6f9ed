# Sourced by the kit's pipeline after its benches (fill.sh): main (base)
# and the two-call fill (webgguf) on the real-layout 8B IQ4_XS, tg128,
# interleaved twice, then gpu-profile of both.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  for i in 1 2; do
    WG=$W/base wg base-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
    WG=$W/webgguf wg fill-$i 60 bench -m $f --backend gpu -p 1 -n 128 -r 5 --json
  done
  lb again-llama-3.1-8b-IQ4_XS 60 -m $f -ngl 99 -p 0 -n 128 -r 5 -fa 1
  WG=$W/base wg prof-base 60 gpu-profile -m $f -n 32
  WG=$W/webgguf wg prof-fill 60 gpu-profile -m $f -n 32
fi
