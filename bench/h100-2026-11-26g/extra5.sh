# Sourced by the kit's pipeline.sh (go5.sh patches it in) after its benches:
# uses its wg, lb, mf and WG. A second pass of both engines on each file
# (a run's first bench has read low), main's CLI (1bffe89) on the same
# files, and gpu-profile of the 8B with both CLIs.
for s in $SHAPES; do for q in $QUANTS; do
  f=$(mf $s-$q); [ -n "$f" ] || continue
  lb $s-$q-pass2 300 -m $f -ngl 99 -p 512 -n 128 -r 3 -fa 1
  wg $s-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  WG=$W/webgguf-main; wg main-$s-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json; WG=$W/webgguf
done; done
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
  WG=$W/webgguf-main; wg prof-main-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32; WG=$W/webgguf
done
