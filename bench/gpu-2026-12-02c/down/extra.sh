# Sourced by the kit's pipeline after its benches (go.sh): main's default
# against down_q on, tg128 medians of 5, two rounds in opposite orders,
# on the real-layout 8B IQ4_XS and Q4_K_M, then llama-bench again and
# gpu-profile with down_q.
x_tg() {  # LABEL MODEL [ENV=VALUE..]
  local label=$1 f=$2; shift 2
  local v=$(env "$@" timeout 60 $WG bench -m $f --backend gpu -p 1 -n 128 -r 5 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$label ${v:-fail}" >> $R/down.txt; log "down: $label ${v:-fail}"
}
for x_q in IQ4_XS Q4_K_M; do
  x_f=$(mf llama-3.1-8b-$x_q); [ -n "$x_f" ] || continue
  x_tg "1 $x_q main" $x_f WEBGGUF_GPU_DOWN_Q=0
  x_tg "1 $x_q down" $x_f WEBGGUF_GPU_DOWN_Q=1
  x_tg "2 $x_q down" $x_f WEBGGUF_GPU_DOWN_Q=1
  x_tg "2 $x_q main" $x_f WEBGGUF_GPU_DOWN_Q=0
  lb again-llama-3.1-8b-$x_q 60 -m $x_f -ngl 99 -p 0 -n 128 -r 5 -fa 1
done
x_f=$(mf llama-3.1-8b-IQ4_XS)
[ -n "$x_f" ] && WEBGGUF_GPU_DOWN_Q=1 wg prof-down 60 gpu-profile -m $x_f -n 32
