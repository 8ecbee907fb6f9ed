# Run by the kit's pipeline while llama-quantize runs (go2.sh): tg64 of
# main_q's team shapes on the synthetic 8B IQ4_XS, two rounds in opposite
# orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_ab /tmp/res/ab2.txt "llama-3.1-8b:IQ4_XS" \
  off:webgguf:WEBGGUF_GPU_WO_Q=0 8x64:webgguf 2x64:webgguf:WEBGGUF_GPU_WO_Q_SHAPE=2x64 \
  1x32:webgguf:WEBGGUF_GPU_WO_Q_SHAPE=1x32 4x128:webgguf:WEBGGUF_GPU_WO_Q_SHAPE=4x128
echo "next after $(( $(date +%s) - s )) s"
