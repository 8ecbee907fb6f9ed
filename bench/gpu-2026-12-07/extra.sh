# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B Q8_0 (ours in one
# load), then gpu-profile of it for the per-kernel bandwidth table.
for q in Q8_0; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] || continue
  lb depth-llama-3.1-8b-$q 150 -m $f -ngl 99 -p 0 -n 128 -d 0,2048,8192 -r 3 -fa 1
  wg depth-llama-3.1-8b-$q 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
done
f=$(mf llama-3.1-8b-Q8_0)
[ -n "$f" ] && wg prof-llama-3.1-8b-Q8_0 120 gpu-profile -m $f -n 32
