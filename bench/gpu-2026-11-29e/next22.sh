# Run by the kit's pipeline (go22.sh patches it in) while llama.cpp
# quantizes: code-book layouts (WEBGGUF_GPU_CODE_BOOK) on synthetic 8B
# IQ4_XS and IQ4_NL, tg64 medians, three rounds, order reversed in the
# second.
cd /tmp/sbs
. ./sbs-common.sh
V="1x1 32x0 16x0 8x0"
for rd in 1 2 3; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for c in $vs; do
      v=$(WEBGGUF_GPU_CODE_BOOK=$c sbs_tg ./webgguf $m)
      echo "$rd $m $c $v"
    done
  done
done
