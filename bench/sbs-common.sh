# Shared steps of the side-by-side device runs (sourced by a run's go*.sh
# on the device, from the repository root, carry ['.sbs']), so that each
# run's script holds only what that run measures. 2026-11-29c on; the
# earlier go*.sh scripts keep their own copies, as the records of what ran.
#
# A lent machine does not outlive the call that drives it (2026-11-29c),
# so a run must fit one call: ~570 s after the machine starts. Before the
# call, here: .sbs/llama-bin.tgz (once; how: bench/llama-prebuilt.md) and
# bench/sbs-compact.sh (room in the carry). A run's go script then does,
# on the device:
#   . bench/sbs-common.sh
#   sbs_llama_src; sbs_unpack webgguf; sbs_vulkan; sbs_diag webgguf
#   sbs_prebuilt                      # skip the ~250 s llama.cpp build
#   sbs_next NEXT.sh; sbs_after EXTRA.sh   # optional
#   exec bash .sbs/device.sh SECONDS
# (sbs_go does all of that in one call), with SHAPES and QUANTS exported
# for the files that fit the call (the 8B quantizing takes 24-186 s a
# file: IQ4_XS the longest).

# sbs_unpack NAME..: .sbs/NAME.gz -> .sbs/NAME, executable.
sbs_unpack() {
  local n
  for n in "$@"; do gunzip -f .sbs/$n.gz && chmod +x .sbs/$n; done
}

# The Vulkan loader from the kit's debs, and NVIDIA's ICD where the machine
# has it (device.sh does the same for the pipeline it starts).
sbs_vulkan() {
  local f ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if ! ldconfig -p | grep -q 'libvulkan.so.1 '; then
    for f in .sbs/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  fi
  if [ -f $ICD ]; then export VK_DRIVER_FILES=$ICD
  else echo "no $ICD: $(ls /usr/local/nvidia/share/vulkan/icd.d /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1 | tr '\n' ' ')"; fi
}

# sbs_diag NAME..: one short synthetic bench per binary, so that a broken
# binary or driver shows in the first poll's output, not after the quantizing.
sbs_diag() {
  local b
  for b in "$@"; do
    echo "== diag $b"
    timeout 60 .sbs/$b bench --backend gpu --synthetic llama-3.2-1b:Q4_K -p 64 -n 16 -r 1 --json 2>&1 | tail -2 | cut -c1-300
    echo "rc=${PIPESTATUS[0]}"
  done
}

# sbs_tests LOG: every gpu:: test of .sbs/tests-lib (unpacked), the
# failures and the summary into LOG and stdout.
sbs_tests() {
  local s=$(date +%s)
  .sbs/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300 | tee "$1"
  echo "tests after $(( $(date +%s) - s )) s"
}

# sbs_next NEXT: copy NEXT into .sbs and patch the kit's pipeline.sh so
# that NEXT starts after its bandwidth steps, while llama.cpp builds and
# quantizes (the GPU is idle then), and the benches wait for it.
sbs_next() {
  local next=$(basename "$1")
  # NEXT may use this file's sbs_tg from /tmp/sbs.
  chmod u+w .sbs/pipeline.sh; cp "$1" "${BASH_SOURCE[0]}" .sbs/
  sed -i "/^wait\$/a (bash \$W/$next > \$R/next.log 2>\&1; touch \$R/next.done) \&" .sbs/pipeline.sh
  sed -i '/^python3 \$W\/bpt.py/i while [ ! -f $R/next.done ]; do sleep 2; done; log "next script done"' .sbs/pipeline.sh
}

# sbs_after EXTRA: copy EXTRA into .sbs; the pipeline sources it after the
# benches (it may use the pipeline's wg, lb and mf).
sbs_after() {
  local extra=$(basename "$1")
  chmod u+w .sbs/pipeline.sh; cp "$1" .sbs/
  sed -i "/^nvidia-smi -q -d CLOCK/i . \$W/$extra" .sbs/pipeline.sh
}

# sbs_patch NEXT EXTRA: both.
sbs_patch() { sbs_next "$1"; sbs_after "$2"; }

# sbs_prebuilt: where the checkout has .sbs/llama-bin.tgz
# (bench/llama-prebuilt.md), device.sh takes llama.cpp from it
# (llama-prebuilt.sh) and builds only if that fails: the build is ~250 s
# of the ~570 a call has (2026-11-29c). Call before device.sh.
sbs_prebuilt() {
  [ -f .sbs/llama-bin.tgz ] || { echo "no .sbs/llama-bin.tgz: llama.cpp builds on the device"; return; }
  chmod u+w .sbs/device.sh
  cp "$(dirname "${BASH_SOURCE[0]}")"/llama-prebuilt.sh .sbs/
  sed -i 's|^setsid nohup bash -c "cmake|bash /tmp/sbs/llama-prebuilt.sh 2>> /tmp/prebuilt.err \|\| setsid nohup bash -c "cmake|' .sbs/device.sh
  grep -q llama-prebuilt .sbs/device.sh || echo "sbs_prebuilt: device.sh not patched (its build line changed?)"
}

# sbs_llama_src: the llama.cpp source back from .sbs/llama.tgz where
# sbs-compact.sh packed it (device.sh's fallback build needs it).
sbs_llama_src() {
  [ -f .sbs/llama.tgz ] && tar xzf .sbs/llama.tgz -C .sbs
  return 0
}

# sbs_go SECONDS NEXT EXTRA BINARY..: a whole side-by-side call, the
# steps above in order (2026-11-29e on): on a machine still held from a
# call before, poll its run; else .sbs/BINARY.. unpacked, the Vulkan
# loader, a diag bench of .sbs/webgguf, the prebuilt llama.cpp, NEXT and
# EXTRA patched in, and device.sh started (with SHAPES and QUANTS from
# the environment).
sbs_go() {
  local secs=$1 next=$2 extra=$3; shift 3
  if [ -d /tmp/sbs ]; then exec bash /tmp/sbs/poll.sh "$secs"; fi
  sbs_llama_src
  sbs_unpack "$@"
  sbs_vulkan
  sbs_diag webgguf
  sbs_prebuilt
  sbs_patch "$next" "$extra"
  exec bash .sbs/device.sh "$secs"
}

# sbs_short NAME..: the start of a short call (no llama.cpp): .sbs/NAME..
# unpacked, the Vulkan loader, OUT defaulted to /tmp, and one small bench
# of the first binary so that the driver's first-use costs fall outside
# the measurements.
sbs_short() {
  sbs_unpack "$@"
  sbs_vulkan
  OUT=${OUT:-/tmp}
  timeout 60 .sbs/$1 bench --backend gpu --synthetic llama-3.2-1b:Q4_K -p 16 -n 16 -r 1 > /dev/null 2>&1
}

# sbs_depth NAME..: from an EXTRA script (the pipeline's lb, wg and mf),
# both engines' tg128 at depth 0, 2,048 and 8,192 on each model NAME
# (e.g. llama-3.1-8b-Q8_0; ours in one load), as lb-depth-NAME.json and
# webgguf.log's depth-NAME. The dated extra.sh scripts before 2026-12-07
# wrote this loop out.
sbs_depth() {
  local n f
  for n in "$@"; do
    f=$(mf $n); [ -n "$f" ] || continue
    lb depth-$n 150 -m $f -ngl 99 -p 0 -n 128 -d 0,2048,8192 -r 3 -fa 1
    wg depth-$n 150 bench -m $f --backend gpu --ctx 8448 -p 1 -n 128 -d 0,2048,8192 -r 3 --json
  done
}

# sbs_tg BINARY MODEL [DEPTH]: decode tok/s of BINARY on synthetic MODEL
# (tg64 median of 3 after one prompt token, after DEPTH tokens of context
# where given), or "fail"; the caller's prefix assignments (WEBGGUF_GPU_*)
# reach the binary; TG_TIMEOUT (default 100 s) bounds the run.
sbs_tg() {
  local d=() ; [ -n "${3:-}" ] && [ "$3" != 0 ] && d=(-d "$3" --ctx $(( $3 + 128 )))
  local v=$(timeout "${TG_TIMEOUT:-100}" "$1" bench --backend gpu --synthetic "$2" -p 1 -n 64 -r 3 "${d[@]}" --json 2>/dev/null | grep '^{' | tail -1 | python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["tg_median_tok_s"])' 2>/dev/null)
  echo "${v:-fail}"
}

# sbs_ab R "MODEL.." VARIANT..: tg64 (sbs_tg; after DEPTH tokens where
# the environment sets DEPTH) of every variant on every synthetic MODEL,
# two rounds, the variants in the given order and then reversed, each result a line "round model label tok/s" into R and
# stdout. A VARIANT is LABEL:BINARY[:NAME=VALUE,...] (.sbs/BINARY, run with
# those environment variables), e.g. pairs:webgguf:WEBGGUF_GPU_BOOK3=0.
# The one-call A/B scripts before 2026-11-30 wrote this loop out.
sbs_ab() {
  local r=$1 models=$2 rd m v label bin envs
  shift 2
  local fwd=("$@") rev=() i
  for ((i = ${#fwd[@]} - 1; i >= 0; i--)); do rev+=("${fwd[i]}"); done
  for rd in 1 2; do
    for m in $models; do
      local vs=("${fwd[@]}")
      [ $rd = 2 ] && vs=("${rev[@]}")
      for v in "${vs[@]}"; do
        IFS=: read -r label bin envs <<< "$v"
        echo "$rd $m $label $(
          [ -n "$envs" ] && export ${envs//,/ }
          TG_TIMEOUT=${TG_TIMEOUT:-60} sbs_tg .sbs/$bin "$m" "${DEPTH:-0}"
        )" | tee -a "$r"
      done
    done
  done
}

# sbs_begin: the opening of a short call's script (started by
# bench/gpu-2026-12-03/start.sh): R (its results folder, /tmp/res), W (the
# CLI), S (its start second), `log LINE` (timestamped into R/pipeline.log
# and stdout) and a first line naming the card and driver. The short
# scripts of 2026-12-03 to 2026-12-07e wrote these lines out each.
sbs_begin() {
  R=/tmp/res
  W=.sbs/webgguf
  S=$(date +%s)
  log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
}
log() { echo "$(date +%T) $*" | tee -a $R/pipeline.log; }

# sbs_prof NAME MODEL ARGS..: gpu-profile of synthetic MODEL (-n 8, then
# ARGS) into R/prof-NAME.json, its stderr beside it, and a log line (the
# short profiling scripts from 2026-12-07g; tlb.sh and tlb2.sh of 07f
# wrote their own).
sbs_prof() {
  local n=$1 m=$2; shift 2
  timeout 90 $W gpu-profile --synthetic $m -n 8 "$@" > $R/prof-$n.json 2> $R/prof-$n.err
  log "profile $n rc=$? after $(( $(date +%s) - S )) s"
}

# sbs_smi FILE: the card's clocks, power, temperature and throttle
# reasons every 100 ms into FILE, in the background, until the call ends
# (for reading a run's phases against its clocks: log's timestamps).
sbs_smi() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 100 > "$1" 2>&1 &
}
