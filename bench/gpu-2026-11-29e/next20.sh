# Run by the kit's pipeline (go20.sh patches it in) while llama.cpp
# quantizes: code-book layouts CxT (copies x tables) of the new binary and
# main's binary (base), synthetic 8B IQ4_XS and IQ4_NL, tg64 medians,
# two rounds in opposite orders.
cd /tmp/sbs
V="base 1x1 1x2 4x2 8x1 8x2 32x1 32x2"
for rd in 1 2; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for c in $vs; do
      b=./webgguf; [ $c = base ] && b=./webgguf-base
      v=$(WEBGGUF_GPU_CODE_BOOK=${c/base/1x1} timeout 100 $b bench --backend gpu --synthetic $m -p 1 -n 64 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
      echo "$rd $m $c ${v:-fail}"
    done
  done
done
