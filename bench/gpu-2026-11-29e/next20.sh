# Run by the kit's pipeline (go20.sh patches it in) while llama.cpp
# quantizes: code-book layouts CxT (copies x tables) of the new binary and
# main's binary (base), synthetic 8B IQ4_XS and IQ4_NL, tg64 medians,
# two rounds in opposite orders.
cd /tmp/sbs
. ./sbs-common.sh
V="base 1x1 1x2 4x2 8x1 8x2 32x1 32x2"
for rd in 1 2; do
  vs=$V; [ $rd = 2 ] && vs=$(echo $V | tr ' ' '\n' | tac | tr '\n' ' ')
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:IQ4_NL; do
    for c in $vs; do
      b=./webgguf; [ $c = base ] && b=./webgguf-base
      v=$(WEBGGUF_GPU_CODE_BOOK=${c/base/1x1} sbs_tg $b $m)
      echo "$rd $m $c $v"
    done
  done
done
