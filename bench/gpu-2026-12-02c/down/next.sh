# Run by the kit's pipeline while llama-quantize runs (go.sh): every
# gpu:: test of main on this GPU, then tg64 of main's default against
# down_q on (WEBGGUF_GPU_DOWN_Q=1) and against glu_q in 1,024-thread
# workgroups (2x32: 32 teams of 32; 4x64: 16 teams of 64; main's 8x32 has
# 256) on synthetic files, two rounds in opposite orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
sbs_ab /tmp/res/ab.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K" \
  main:webgguf down:webgguf:WEBGGUF_GPU_DOWN_Q=1 \
  glu2x32:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=2x32 glu4x64:webgguf:WEBGGUF_GPU_GLU_Q_SHAPE=4x64
echo "next after $(( $(date +%s) - s )) s"
