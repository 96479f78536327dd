#!/usr/bin/env bash
# make test's compiling ahead (hack/stages.sh runs it at the idle scheduling
# class). It waits until the end-to-end suite starts waiting on its peers
# (test/e2e/run.sh creates $KI_IDLE_SIGNAL then), and compiles, in the order
# they are needed, what the stages after that point and .ci/run's fuzzing
# compile cold: the other Kubernetes versions' peers, the release's tools and
# test, the fuzz targets instrumented. The suites leave two thirds of 2 cores
# idle (32 % busy over the 1.37 suite's 627 s, sampled from /proc/stat);
# started with lint instead, it made lint 563 s longer (docs/testing.md).
#
# Everything lands in the caches the stages read (Go's build cache, the
# peers' and the tools' folders, each built under a lock), so that a stage
# finds it built or waits for the one build in progress. A step that fails
# is left to the stage that needs it (it fails there, with its message), and
# the next step runs. Prints a line a step.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -n ${KI_IDLE_SIGNAL:-} ]] || { echo "prebuild: KI_IDLE_SIGNAL is not set (hack/stages.sh --idle sets it)" >&2; exit 2; }
# At most 3 hours (a stages run is stopped long before).
waited=0
until [[ -e $KI_IDLE_SIGNAL ]]; do
  ((waited < 5400)) || { echo "prebuild: no stage started it in 3 hours"; exit 0; }
  sleep 2
  waited=$((waited + 1))
done
echo "prebuild: started after $((waited * 2)) s"

step() { # NAME COMMAND...
  local name=$1 start=$SECONDS status=0
  shift
  "$@" >/dev/null 2>&1 || status=$?
  if [[ $status -eq 0 ]]; then
    echo "prebuild: $name in $((SECONDS - start)) s"
  else
    echo "prebuild: $name failed (exit $status) after $((SECONDS - start)) s; left to its stage"
  fi
}

step "the other Kubernetes versions' peers" test/e2e/run.sh --build-later-peers
step "the release's tools" hack/tools/build.sh
step "the release test" go list -tags release -export -deps -test ./test/release
step "the fuzz targets, instrumented" hack/fuzz.sh --build
