# Sourced by the kit's pipeline.sh (go7.sh patches it in) after its benches:
# uses its wg, mf and WG. main's path on the same files: the same CLI with
# WEBGGUF_GPU_MID_KEYS=0 (no mid.wgsl lists: decode past 64 keys in
# attention.wgsl's `split` and its merge, as main, 6251dc1, does); then a
# decode profile of the 8B F16 file at 96 keys with both.
for s in $SHAPES; do for q in $QUANTS; do
  f=$(mf $s-$q); [ -n "$f" ] || continue
  WEBGGUF_GPU_MID_KEYS=0 wg main-$s-$q 240 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done; done
f=$(mf llama-3.1-8b-F16)
if [ -n "$f" ]; then
  wg prof-d96-llama-3.1-8b-F16 200 gpu-profile -m $f -n 16 -d 96
  WEBGGUF_GPU_MID_KEYS=0 wg prof-d96-main-llama-3.1-8b-F16 200 gpu-profile -m $f -n 16 -d 96
fi
