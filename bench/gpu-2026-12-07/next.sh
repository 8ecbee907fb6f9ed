# Run by the kit's pipeline (go.sh patches it in) while llama-quantize
# runs: every gpu:: test of main on this GPU.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
echo "next after $(( $(date +%s) - s )) s"
