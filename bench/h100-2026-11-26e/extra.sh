# Sourced by the kit's pipeline.sh (go.sh patches it in) after its benches:
# uses its wg, lb and mf. Profiles of four 8B files (the kit profiles
# Q4_K_M) and of the 8B Q4_K_M at 8192 keys; decode at depth on both
# engines (Q4_K_M and Q4_0 of both shapes); split.wgsl from 512 keys
# against 1024 at d512 (ours; the real 8B Q4_K_M and synthetic Gemma 3).
for q in Q4_0 Q8_0 F16 IQ4_XS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] && wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
done
f=$(mf llama-3.1-8b-Q4_K_M); [ -n "$f" ] && wg prof-d8192-llama-3.1-8b-Q4_K_M 200 gpu-profile -m $f -n 8 -d 8192
for s in $SHAPES; do for q in Q4_K_M Q4_0; do f=$(mf $s-$q); [ -n "$f" ] || continue; for dep in 2048 8192; do
  lb d$dep-$s-$q 300 -m $f -ngl 99 -p 0 -n 128 -r 3 -fa 1 -d $dep
  wg d$dep-$s-$q 240 bench -m $f --backend gpu --ctx $((dep + 256)) -p 1 -n 128 -r 3 -d $dep --json
done; done; done
for rd in 1 2; do for k in 512 1024; do
  f=$(mf llama-3.1-8b-Q4_K_M); [ -n "$f" ] && WEBGGUF_GPU_DEEP_KEYS=$k wg keys$k-$rd-llama-3.1-8b-Q4_K_M 200 bench -m $f --backend gpu --ctx 768 -p 1 -n 32 -r 2 -d 512
  WEBGGUF_GPU_DEEP_KEYS=$k wg keys$k-$rd-gemma3 200 bench --synthetic gemma3-270m:Q8_0 --backend gpu --ctx 768 -p 1 -n 32 -r 2 -d 512
done; done
