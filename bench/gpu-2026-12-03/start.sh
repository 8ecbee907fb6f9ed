#!/usr/bin/env bash
# start.sh SCRIPT SECONDS (on the device, carry ['.sbs']): on a fresh
# machine, the CLI unpacked, the Vulkan loader and a warm-up bench
# (sbs_short), then SCRIPT detached with its results in /tmp/res; on the
# machine of a call before, just the poll. Then .sbs/poll.sh SECONDS
# (res.tgz into $OUT, the log printed).
set -u
if [ ! -d /tmp/res ]; then
  mkdir -p /tmp/res
  . bench/sbs-common.sh
  OUT=/tmp/res sbs_short webgguf
  setsid nohup bash "$1" > /tmp/res/script.out 2>&1 < /dev/null &
fi
exec bash .sbs/poll.sh "${2:-540}"
