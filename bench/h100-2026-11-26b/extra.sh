# Sourced by the kit's pipeline.sh (go.sh patches it in) after its benches:
# uses its wg, lb and mf. Profiles of every 8B file (the kit profiles
# Q4_K_M), decode at depth on both engines, the integer prefill tile on
# real files with the tensor-core tile off, and tg128 with 64-key decode
# splits always (WEBGGUF_GPU_SPLIT_WGS=0, the split lengths before
# 2026-11-26b) on the real Q4_K_M and Q4_0 files.
for s in $SHAPES; do for q in $QUANTS; do
  [ $q = Q4_K_M ] || [ $s = llama-3.2-1b ] && continue
  f=$(mf $s-$q); [ -n "$f" ] && wg prof-$s-$q 200 gpu-profile -m $f -n 32
done; done
for s in $SHAPES; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done
for s in $SHAPES; do for q in Q4_K_M Q4_0; do f=$(mf $s-$q); [ -n "$f" ] || continue
  WEBGGUF_GPU_SPLIT_WGS=0 wg split64-$s-$q 120 bench -m $f --backend gpu -p 1 -n 128 -r 3 --json
  wg splitnew-$s-$q 120 bench -m $f --backend gpu -p 1 -n 128 -r 3 --json
done; done
for s in $SHAPES; do for q in Q4_K_M Q4_0; do f=$(mf $s-$q); [ -n "$f" ] || continue; for ip in 0 1; do
  WEBGGUF_GPU_COOP=0 WEBGGUF_GPU_INT_PREFILL=$ip wg coop0-int$ip-$s-$q 120 bench -m $f --backend gpu -p 512 -n 16 -r 3 --json
done; done; done
