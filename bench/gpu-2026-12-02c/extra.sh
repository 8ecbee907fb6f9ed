# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B IQ4_XS and Q4_K_M
# (ours in one load), gpu-profile of the 8B IQ4_XS (the kit profiles the
# Q4_K_M), then tg128 of main against glu_q in 2x32 on the real-layout 1B
# files, medians of 5, two rounds in opposite orders.
for q in IQ4_XS Q4_K_M; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] || continue
  lb depth-llama-3.1-8b-$q 150 -m $f -ngl 99 -p 0 -n 128 -d 0,2048,8192 -r 3 -fa 1
  wg depth-llama-3.1-8b-$q 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
done
f=$(mf llama-3.1-8b-IQ4_XS)
[ -n "$f" ] && wg prof-llama-3.1-8b-IQ4_XS 120 gpu-profile -m $f -n 32
x_tg() {  # LABEL MODEL [ENV=VALUE..]
  local label=$1 f=$2; shift 2
  local v=$(env "$@" timeout 60 $WG bench -m $f --backend gpu -p 1 -n 128 -r 5 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$label ${v:-fail}" >> $R/glu.txt; log "glu: $label ${v:-fail}"
}
for x_q in Q4_K_M IQ4_XS Q6_K Q4_0 Q5_K_M; do
  x_f=$(mf llama-3.2-1b-$x_q); [ -n "$x_f" ] || continue
  x_tg "1 $x_q main" $x_f WEBGGUF_GPU_GLU_Q_SHAPE=8x32
  x_tg "1 $x_q glu2x32" $x_f WEBGGUF_GPU_GLU_Q_SHAPE=2x32
  x_tg "2 $x_q glu2x32" $x_f WEBGGUF_GPU_GLU_Q_SHAPE=2x32
  x_tg "2 $x_q main" $x_f WEBGGUF_GPU_GLU_Q_SHAPE=8x32
done
