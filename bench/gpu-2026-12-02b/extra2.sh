# Sourced by the kit's pipeline after its benches (go2.sh): main_q's team
# shapes on the real-layout 8B IQ4_XS (tg128 medians of 5, two rounds in
# opposite orders), the Q4_K_M with main_q for every format, and
# gpu-profile of the best-looking shape.
x2_tg() {  # LABEL MODEL [ENV=VALUE..]
  local label=$1 f=$2; shift 2
  local v=$(env "$@" timeout 60 $WG bench -m $f --backend gpu -p 1 -n 128 -r 5 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "$label ${v:-fail}" >> $R/shapes.txt; log "shapes: $label ${v:-fail}"
}
x2_i=$(mf llama-3.1-8b-IQ4_XS); x2_k=$(mf llama-3.1-8b-Q4_K_M)
x2_v=(off:WEBGGUF_GPU_WO_Q=0 8x64:WEBGGUF_GPU_WO_Q_SHAPE=8x64 2x64:WEBGGUF_GPU_WO_Q_SHAPE=2x64
   4x64:WEBGGUF_GPU_WO_Q_SHAPE=4x64 1x32:WEBGGUF_GPU_WO_Q_SHAPE=1x32 2x32:WEBGGUF_GPU_WO_Q_SHAPE=2x32
   4x128:WEBGGUF_GPU_WO_Q_SHAPE=4x128)
if [ -n "$x2_i" ]; then
  for x2_r in 1 2; do
    x2_vs=("${x2_v[@]}"); [ $x2_r = 2 ] && x2_vs=($(printf '%s\n' "${x2_v[@]}" | tac))
    for x2_x in "${x2_vs[@]}"; do x2_tg "$x2_r IQ4_XS ${x2_x%%:*}" $x2_i "${x2_x#*:}"; done
  done
  lb again-llama-3.1-8b-IQ4_XS 60 -m $x2_i -ngl 99 -p 0 -n 128 -r 5 -fa 1
  WEBGGUF_GPU_WO_Q_SHAPE=2x64 wg prof-2x64 60 gpu-profile -m $x2_i -n 32
fi
if [ -n "$x2_k" ]; then
  for x2_r in 1 2; do
    x2_tg "$x2_r Q4_K_M off" $x2_k WEBGGUF_GPU_WO_Q=0
    x2_tg "$x2_r Q4_K_M all-2x64" $x2_k WEBGGUF_GPU_WO_Q=all WEBGGUF_GPU_WO_Q_SHAPE=2x64
    x2_tg "$x2_r Q4_K_M all-1x32" $x2_k WEBGGUF_GPU_WO_Q=all WEBGGUF_GPU_WO_Q_SHAPE=1x32
  done
fi
