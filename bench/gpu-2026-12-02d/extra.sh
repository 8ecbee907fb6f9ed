# Sourced by the kit's pipeline after the benches (go.sh): both engines'
# decode at depth 2048 and 8192 on the real-layout 8B IQ4_XS and Q4_K_M
# (ours in one load), then ours at depth with the merge in two levels
# (WEBGGUF_GPU_MERGE2=1) and with two-chunk splits from 2,048 keys
# (WEBGGUF_GPU_DEEP_FAR_KEYS=2048) against main, two rounds in opposite
# orders (tg128 medians of 3, "at 2048 / at 8192" a line in depth-ab.txt),
# and gpu-profile of the 8B IQ4_XS (the kit profiles the Q4_K_M).
for q in IQ4_XS Q4_K_M; do
  f=$(mf llama-3.1-8b-$q)
  [ -n "$f" ] || continue
  lb depth-llama-3.1-8b-$q 150 -m $f -ngl 99 -p 0 -n 128 -d 0,2048,8192 -r 3 -fa 1
  wg depth-llama-3.1-8b-$q 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
done
x_depth() {  # LABEL MODEL [ENV=VALUE]
  local label=$1 f=$2; shift 2
  local v=$(env "$@" timeout 120 $WG bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 2048,8192 -r 3 --json 2>/dev/null \
    | grep '^{' | python3 -c 'import json,sys; print(" / ".join("%.1f" % json.loads(l)["tg_median_tok_s"] for l in sys.stdin))' 2>/dev/null)
  echo "$label ${v:-fail}" >> $R/depth-ab.txt; log "depth-ab: $label ${v:-fail}"
}
x_vs=(WEBGGUF_GPU_MERGE2=0 WEBGGUF_GPU_MERGE2=1 WEBGGUF_GPU_DEEP_FAR_KEYS=2048)
for x_q in IQ4_XS Q4_K_M; do
  x_f=$(mf llama-3.1-8b-$x_q); [ -n "$x_f" ] || continue
  for x_rd in 1 2; do
    x_order="0 1 2"; [ $x_rd = 2 ] && x_order="2 1 0"
    for x_i in $x_order; do x_depth "$x_rd $x_q ${x_vs[$x_i]}" $x_f ${x_vs[$x_i]}; done
  done
done
f=$(mf llama-3.1-8b-IQ4_XS)
[ -n "$f" ] && wg prof-llama-3.1-8b-IQ4_XS 120 gpu-profile -m $f -n 32
