# Sourced by the kit's pipeline.sh (go6.sh patches it in) after its benches:
# uses its wg, lb, mf and WG. Main's CLI (bf15c17's code, built at
# 6b67000) on the same files, then a second pass of ours (a run's first
# bench has read low), and decode profiles of the 8B files with both.
for s in $SHAPES; do for q in $QUANTS; do
  f=$(mf $s-$q); [ -n "$f" ] || continue
  WG=$W/webgguf-main; wg main-$s-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json; WG=$W/webgguf
  wg $s-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done; done
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
  WG=$W/webgguf-main; wg prof-main-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32; WG=$W/webgguf
done
