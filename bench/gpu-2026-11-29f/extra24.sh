# Sourced by the kit's pipeline.sh (go24.sh patches it in) after its
# benches: fc8e7f8's binary (base) on each real-layout file, then main's
# again (an interleaved second round of ours).
for q in Q3_K_M Q2_K; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] || continue
  WG=$W/webgguf-base wg base-llama-3.1-8b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  wg again-llama-3.1-8b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
