# Run by the kit's pipeline (go.sh patches it in) while llama-quantize
# runs: every gpu:: test of main on this GPU, then gpu-profile of the
# synthetic 8B IQ4_XS (every matrix IQ4_XS) at 0, 2048 and 8192 keys, so
# that the decode step's kernels at depth (split.wgsl, the merge) are
# timed with the landed tree.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
for d in 2048 8192; do
  timeout 150 /tmp/sbs/webgguf gpu-profile --synthetic llama-3.1-8b:IQ4_XS -n 16 -d $d \
    > /tmp/res/prof-syn-8b-IQ4_XS-d$d.json 2> /tmp/res/prof-syn-d$d.err
  echo "profile d$d rc=$?"
done
echo "next after $(( $(date +%s) - s )) s"
