# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B IQ4_XS and Q4_K_M
# (ours in one load), and gpu-profile of the 8B IQ4_XS (the kit profiles
# the Q4_K_M). An A/B of ours goes here, after the benches (2026-12-02d's
# extra.sh has the depth A/B's loop).
for q in IQ4_XS Q4_K_M; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] || continue
  lb depth-llama-3.1-8b-$q 150 -m $f -ngl 99 -p 0 -n 128 -d 0,2048,8192 -r 3 -fa 1
  wg depth-llama-3.1-8b-$q 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
done
f=$(mf llama-3.1-8b-IQ4_XS)
[ -n "$f" ] && wg prof-llama-3.1-8b-IQ4_XS 120 gpu-profile -m $f -n 32
