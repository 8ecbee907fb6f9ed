# Run by the kit's pipeline (go21.sh patches it in) while llama.cpp
# quantizes: WEBGGUF_GPU_MV_ZERO=1 (default) and 0, synthetic, tg64
# medians, three rounds in alternating order.
cd /tmp/sbs
. ./sbs-common.sh
for rd in 1 2 3; do
  for m in llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K tinyllama-1.1b:Q4_0; do
    for z in 1 0; do
      [ $rd = 2 ] && z=$((1 - z))
      v=$(WEBGGUF_GPU_MV_ZERO=$z sbs_tg ./webgguf $m)
      echo "$rd $m zero=$z $v"
    done
  done
done
