#!/usr/bin/env bash
# 2026-12-07i, third call (fresh machine, carry ['.sbs'] without the
# llama.cpp files, the CLI of this tree: gpu-bandwidth's kernels timed by
# GPU timestamps after 0.5 s of the same work):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07i/bw3.sh SECONDS
# What gpu-bandwidth now reports, as the kit's pipeline calls it (-r 10,
# 1 GiB) and longer, beside CUDA's read and copy on the same card.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
python3 .sbs/bw.py > $R/torch-bw-1.json 2>> $R/pipeline.log
log "CUDA 1: $(cut -c1-400 $R/torch-bw-1.json)"
for a in "1024 10 1" "1024 10 2" "1024 100 1" "2047 10 1" "1024 10 3"; do
  set -- $a
  timeout 100 $W gpu-bandwidth --mib $1 -r $2 --json --shapes sum,0:256:8:4,2:512:2:16 > $R/bw-$1-r$2-$3.json 2> $R/bw-$1-r$2-$3.err
  log "bw $1 MiB r$2 ($3) rc=$? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("copy %.0f kernel copy %.0f read %.0f (%s);" % (d["gb_s_read_plus_write"], d["kernel_copy_gb_s_read_plus_write"], d["kernel_read_gb_s"], d["kernel_read_timed_by"]), " ".join("%.0f" % s["read_gb_s"] for s in d["shapes"]))' $R/bw-$1-r$2-$3.json 2>&1 | tail -1)"
done
python3 .sbs/bw.py > $R/torch-bw-2.json 2>> $R/pipeline.log
log "CUDA 2: $(cut -c1-400 $R/torch-bw-2.json)"
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
