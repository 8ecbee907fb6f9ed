# Run by the kit's pipeline (go.sh patches it in) while llama-quantize
# runs: every gpu:: test of the working tree on this GPU, then tg64 of
# main_q off / on for the code-book formats (the default) / on for all,
# and the default in other team shapes, on synthetic files (every matrix
# one type), two rounds in opposite orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
sbs_ab /tmp/res/ab.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:IQ4_NL" \
  off:webgguf:WEBGGUF_GPU_WO_Q=0 book:webgguf all:webgguf:WEBGGUF_GPU_WO_Q=all \
  s4x32:webgguf:WEBGGUF_GPU_WO_Q_SHAPE=4x32 s16x128:webgguf:WEBGGUF_GPU_WO_Q_SHAPE=16x128
sbs_ab /tmp/res/ab1b.txt "llama-3.2-1b:IQ4_XS" \
  off:webgguf:WEBGGUF_GPU_WO_Q=0 min0:webgguf:WEBGGUF_GPU_WO_Q_MIN=0
echo "next after $(( $(date +%s) - s )) s"
