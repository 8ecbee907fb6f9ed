# Run by the kit's pipeline while llama-quantize runs: tg64 of main
# (base), the two-call fill (fill) and main with 4-row plain products
# (rows4, WEBGGUF_GPU_MV_ROWS=0,0,4: Wo and down fill the code book half
# as often) on synthetic IQ4_XS files, two rounds in opposite orders.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_ab /tmp/res/ab.txt "llama-3.1-8b:IQ4_XS llama-3.2-1b:IQ4_XS" \
  base:base fill:webgguf rows4:base:WEBGGUF_GPU_MV_ROWS=0,0,4
echo "ab after $(( $(date +%s) - s )) s"
