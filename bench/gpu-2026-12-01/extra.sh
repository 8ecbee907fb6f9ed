# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B IQ4_XS.
f=$(mf llama-3.1-8b-IQ4_XS)
if [ -n "$f" ]; then
  lb depth-llama-3.1-8b-IQ4_XS 120 -m $f -ngl 99 -p 0 -n 128 -d 2048,8192 -r 3 -fa 1
  wg depth-llama-3.1-8b-IQ4_XS 120 bench -m $f --backend gpu -p 1 -n 128 -d 2048,8192 -r 3 --json
fi
