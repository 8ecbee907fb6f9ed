#!/usr/bin/env bash
# On the device, from device.sh (sbs_prebuilt in sbs-common.sh patches it
# in): llama.cpp's llama-bench and llama-quantize from
# /tmp/sbs/llama-bin.tgz (built off the device, as bench/llama-prebuilt.md
# says: CUDA 13.0, sm_90, ggml linked in) instead
# of the ~250 s build, which is most of one device call. The binaries go
# to llama/build/bin behind wrappers that find the device's CUDA runtime
# and cuBLAS; /tmp/build.rc = 0 tells the pipeline they are ready. Exits
# non-zero (and device.sh builds as before) if they do not run here.
set -u
B=/tmp/sbs/llama/build/bin
mkdir -p $B/real
tar xzf /tmp/sbs/llama-bin.tgz -C $B/real || exit 1
# The device's CUDA 13.0 libraries, and its GCC 13 runtime (libstdc++, libgomp)
# where the system's is older.
L=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/opt/gcc/lib64
for n in llama-bench llama-quantize; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' "$L" "$B/real/$n" > $B/$n
  chmod +x $B/$n $B/real/$n
  if LD_LIBRARY_PATH=$L ldd $B/real/$n | grep -q 'not found'; then
    echo "prebuilt $n: $(LD_LIBRARY_PATH=$L ldd $B/real/$n | grep 'not found' | tr '\n' ' ')" >&2
    rm -rf $B; exit 1
  fi
done
# llama-bench lists the CUDA device, or the prebuilt build does not fit this machine.
if ! $B/llama-bench --list-devices 2>&1 | tee /tmp/prebuilt-devices.txt | grep -q 'CUDA0'; then
  echo "prebuilt llama-bench sees no CUDA device: $(tail -3 /tmp/prebuilt-devices.txt | tr '\n' ' ')" >&2
  rm -rf $B; exit 1
fi
echo "prebuilt llama.cpp from llama-bin.tgz: $(grep -m1 CUDA0 /tmp/prebuilt-devices.txt)" > /tmp/build.log
echo 0 > /tmp/build.rc
