# Sourced by scripts/setup.sh and scripts/test-tint.sh.
# fetch CMD..: run a registry fetch quietly; on failure try once more (a
# silenced `npm ci` failed a local CI run, 2026-12-07g, and passed when run
# again), and if that fails too, show what it said: a silenced fetch that
# fails leaves CI with no reason.
fetch() {
  local out
  out=$(mktemp)
  if "$@" >"$out" 2>&1 || { sleep 10; "$@" >"$out" 2>&1; }; then
    rm -f "$out"
  else
    printf '[fetch] failed twice: %s\n' "$*" >&2
    tail -n 30 "$out" >&2
    rm -f "$out"
    return 1
  fi
}
