# Run by the kit's pipeline (go22.sh patches it in) while llama.cpp
# quantizes: code-book layouts (WEBGGUF_GPU_CODE_BOOK) on synthetic 8B
# IQ4_XS and IQ4_NL, tg64 medians, three rounds, order reversed in the
# second.
cd /tmp/sbs
V="1x1 32x0 16x0 8x0"
for rd in 1 2 3; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for c in $vs; do
      v=$(WEBGGUF_GPU_CODE_BOOK=$c timeout 100 ./webgguf bench --backend gpu --synthetic $m -p 1 -n 64 -r 3 --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
      echo "$rd $m $c ${v:-fail}"
    done
  done
done
