# Run by the kit's pipeline (go.sh patches it in) while llama.cpp builds
# and quantizes: tg64 of main, rz and staged on three synthetic files, two
# rounds in opposite orders (sbs_ab).
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_ab /tmp/res/ab.txt "llama-3.1-8b:IQ4_XS llama-3.2-1b:Q4_K smollm2-135m:Q4_0" \
  main:webgguf rz:rz staged:staged
echo "ab after $(( $(date +%s) - s )) s"
