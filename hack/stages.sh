#!/usr/bin/env bash
# Runs make targets one after another, as make test's prerequisites ran, and
# prints how long each took: a line as each ends, the table at the end (the
# cold time per stage that issue 57 asks for is this table on a fresh clone
# with empty caches). It stops at the first that fails, saying which.
#
#   hack/stages.sh [--idle SCRIPT --until TARGET] MAKE TARGET...
#
# --idle runs SCRIPT beside the stages at the idle scheduling class (chrt
# --idle 0 and ionice -c 3; nice -n 19 where they are refused): it gets only
# the CPU and disk the stages leave. The stages say when to start: SCRIPT
# gets KI_IDLE_SIGNAL, a file's path the stages get too, and waits until a
# stage creates it (test/e2e/run.sh, once its first suite is compiled and
# about to wait on its peers). SCRIPT is stopped, with its process group,
# before TARGET (a stage that measures speed) and at the end; its lines are
# printed then.
set -euo pipefail
idle="" until=""
if [[ ${1:-} == --idle ]]; then
  idle=${2:-} until=${4:-}
  [[ ${3:-} == --until && -n $idle && -n $until ]] \
    || { echo "stages: usage: hack/stages.sh [--idle SCRIPT --until TARGET] MAKE TARGET..." >&2; exit 2; }
  shift 4
fi
make=$1
shift
idle_pid="" idle_log="" signal_dir=""
stop_idle() {
  [[ -n $idle_pid ]] || return 0
  kill -TERM -- "-$idle_pid" 2>/dev/null || true
  wait "$idle_pid" 2>/dev/null || true
  # What it left running after TERM (a compiler mid-file): killed.
  kill -KILL -- "-$idle_pid" 2>/dev/null || true
  idle_pid=""
  cat "$idle_log"
}
cleanup() {
  stop_idle
  rm -rf "$signal_dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ -n $idle ]]; then
  signal_dir=$(mktemp -d)
  idle_log=$signal_dir/idle.log
  export KI_IDLE_SIGNAL=$signal_dir/start
  # setsid: its own process group, so that stopping it stops its compilers.
  if chrt --idle 0 ionice -c 3 true 2>/dev/null; then
    setsid chrt --idle 0 ionice -c 3 "$idle" >"$idle_log" 2>&1 &
  else
    setsid nice -n 19 "$idle" >"$idle_log" 2>&1 &
  fi
  idle_pid=$!
fi
table=()
total=0
for target in "$@"; do
  [[ $target != "$until" ]] || stop_idle
  start=$SECONDS
  status=0
  "$make" --no-print-directory "$target" || status=$?
  secs=$((SECONDS - start))
  total=$((total + secs))
  table+=("$(printf '  %-14s %5d s' "$target" "$secs")")
  if [ "$status" -ne 0 ]; then
    echo "stages: $target failed (exit $status) after $secs s" >&2
    exit "$status"
  fi
  echo "stages: $target passed in $secs s"
done
stop_idle
echo "stages: all $# passed in $total s"
printf '%s\n' "${table[@]}"
