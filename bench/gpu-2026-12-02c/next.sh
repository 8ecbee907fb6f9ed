# Run by the kit's pipeline (go.sh patches it in) while llama-quantize
# runs: tg64 of main (glu_q in 8x32: 8 teams of 32 threads, 256) against
# glu_q in 2x32 (32 teams of 32, 1,024 threads) on synthetic files of the
# narrower shapes, two rounds in opposite orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_ab /tmp/res/ab.txt "llama-3.2-1b:Q4_K llama-3.2-1b:Q6_K llama-3.2-1b:Q4_0 llama-3.2-1b:Q5_K llama-3.2-1b:IQ4_XS tinyllama-1.1b:Q4_K tinyllama-1.1b:Q4_0" \
  main:webgguf glu2x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=2x32
echo "next after $(( $(date +%s) - s )) s"
