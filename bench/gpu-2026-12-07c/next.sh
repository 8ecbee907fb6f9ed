# Run by the kit's pipeline (go.sh patches it in) while llama-quantize
# runs: every gpu:: test of main on this GPU, where the lib's test binary
# was carried.
cd /tmp && ln -sfn /tmp/sbs /tmp/.sbs
[ -x /tmp/sbs/tests-lib ] || { echo "no tests-lib carried: tests skipped"; exit 0; }
. /tmp/sbs/sbs-common.sh
s=$(date +%s)
sbs_tests /tmp/res/tests.txt
echo "next after $(( $(date +%s) - s )) s"
