# Sourced by the kit's pipeline.sh (go9.sh patches it in) after its benches:
# uses its wg, lb and mf. Decode at depth on the Q4_K_M files, both engines
# (ours with split.wgsl's splits, main's path, and with mid.wgsl's,
# WEBGGUF_GPU_DEEP_MID=1); pp512 of the 8B files with flash_coop.wgsl
# (WEBGGUF_GPU_FLASH_COOP=1); a second pass of ours on the 1B files.
for s in llama-3.1-8b llama-3.2-1b; do f=$(mf $s-Q4_K_M); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-Q4_K_M 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-Q4_K_M 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
  WEBGGUF_GPU_DEEP_MID=1 wg d$dep-$s-Q4_K_M-deepmid 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done
for q in $QUANTS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] || continue
  WEBGGUF_GPU_FLASH_COOP=1 wg llama-3.1-8b-$q-flashcoop 240 bench -m $f --backend gpu -p 512 -n 4 -r 3 --json
done
for q in $QUANTS; do
  f=$(mf llama-3.2-1b-$q); [ -n "$f" ] || continue
  wg llama-3.2-1b-$q-pass2 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
