# Sourced by the kit's pipeline.sh (go4.sh patches it in) after its benches:
# uses its wg, lb and mf. Each 1B file's pp512 / tg128 again on both
# engines, right after the first pass (the first pass of a short 1B bench
# can run before the GPU's clocks rise: ab6.log).
for s in $SHAPES; do for q in $QUANTS; do
  f=$(mf $s-$q); [ -n "$f" ] || continue
  lb again-$s-$q 300 -m $f -ngl 99 -p 512 -n 128 -r 3 -fa 1
  wg again-$s-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done; done
