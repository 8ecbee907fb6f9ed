# Run by the kit's pipeline while llama-quantize runs (go.sh): every
# gpu:: test of main on this GPU, then tg64 of main's default against
# down_q on (WEBGGUF_GPU_DOWN_Q=1) on synthetic files, two rounds in
# opposite orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
sbs_ab /tmp/res/ab.txt "llama-3.1-8b:IQ4_XS llama-3.1-8b:Q4_K llama-3.1-8b:Q4_0 llama-3.2-1b:Q4_K" \
  main:webgguf down:webgguf:WEBGGUF_GPU_DOWN_Q=1
echo "next after $(( $(date +%s) - s )) s"
