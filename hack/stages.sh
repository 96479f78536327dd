#!/usr/bin/env bash
# Runs make targets one after another, as make test's prerequisites ran, and
# prints how long each took: a line as each ends, the table at the end (the
# cold time per stage that issue 57 asks for is this table on a fresh clone
# with empty caches). It stops at the first that fails, saying which.
#
#   hack/stages.sh MAKE TARGET...
set -euo pipefail
make=$1
shift
table=()
total=0
for target in "$@"; do
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
echo "stages: all $# passed in $total s"
printf '%s\n' "${table[@]}"
