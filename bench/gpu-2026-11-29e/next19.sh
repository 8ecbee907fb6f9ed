# Run by the kit's pipeline (go19.sh patches it in) while llama.cpp
# quantizes: glu_q on and off, synthetic, tg64 medians, two interleaved
# rounds; TinyLlama with glu_q_min 0 (its 5,632 outputs are below the
# default 8,192).
cd /tmp/sbs
. ./sbs-common.sh
export WEBGGUF_GPU_GLU_Q_MIN=0
for rd in 1 2; do
  for m in tinyllama-1.1b:Q4_0 tinyllama-1.1b:Q4_K llama-3.1-8b:IQ4_XS; do
    for g in 0 1; do
      [ $rd = 2 ] && g=$((1 - g))
      v=$(WEBGGUF_GPU_GLU_Q=$g sbs_tg ./webgguf $m)
      echo "$rd $m glu_q=$g $v"
    done
  done
done
