#!/usr/bin/env bash
# 2026-12-07i, second call (fresh machine, carry ['.sbs'] without the
# llama.cpp files, the CLI of this tree):
#   bash bench/gpu-2026-12-03/start.sh bench/gpu-2026-12-07i/bw2.sh SECONDS
# bw.sh found bandwidth_shapes.wgsl in read_sum's own shape (0:256:8:4)
# reading 3.06-3.15 TB/s where gpu-bandwidth's read_sum, timed first in
# the same process on its own buffer, read 2.69-2.95. Is it the kernel or
# where/when it is timed? `--shapes sum` runs read_sum itself on the
# shapes' buffer: the two kernels interleaved, at 1 GiB and 2,047 MiB, 20
# and 200 reads a timing; CUDA's read beside.
set -u
. bench/sbs-common.sh
sbs_begin
sbs_smi $R/smi.csv
python3 .sbs/bw.py > $R/torch-bw-1.json 2>> $R/pipeline.log
log "CUDA read 1: $(cut -c1-300 $R/torch-bw-1.json)"
L=sum,0:256:8:4,sum,0:256:8:4,2:512:2:16,sum,0:256:8:4,sum
for mib in 1024 2047; do
  for r in 20 200; do
    for rd in 1 2; do
      timeout 100 $W gpu-bandwidth --mib $mib -r $r --json --shapes $L > $R/sum-$mib-r$r-$rd.json 2> $R/sum-$mib-r$r-$rd.err
      log "sum $mib r$r round $rd rc=$? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("read_sum %.0f;" % d["kernel_read_gb_s"], " ".join("%s %.0f" % ("sum" if s["order"] == 3 else "%d:%d:%d:%d" % (s["order"], s["wg"], s["loads"], s["turns"]), s["read_gb_s"]) for s in d["shapes"]))' $R/sum-$mib-r$r-$rd.json 2>&1 | tail -1)"
    done
  done
done
python3 .sbs/bw.py > $R/torch-bw-2.json 2>> $R/pipeline.log
log "CUDA read 2: $(cut -c1-300 $R/torch-bw-2.json)"
log "all done after $(( $(date +%s) - S )) s"
touch $R/DONE
