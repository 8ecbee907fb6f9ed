# Sourced by the kit's pipeline.sh (go26.sh patches it in) after its
# benches: glu_q from 8,192 outputs (the default before 2026-11-29g) and
# then the default, one right after the other, on each TinyLlama file.
for q in Q4_0 Q4_K_M IQ4_XS; do
  f=$(mf tinyllama-1.1b-$q); [ -n "$f" ] || continue
  export WEBGGUF_GPU_GLU_Q_MIN=8192
  wg old-tinyllama-1.1b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
  unset WEBGGUF_GPU_GLU_Q_MIN
  wg new-tinyllama-1.1b-$q 120 bench -m $f --backend gpu -p 512 -n 128 -r 3 --json
done
