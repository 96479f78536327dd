#!/usr/bin/env bash
# make test's idle-time prebuild: compiles, at the idle scheduling class
# (hack/stages.sh starts it under `chrt --idle 0`: it runs only on a core
# nothing else wants), what make test's later stages and .ci/run's fuzzing
# will compile, in the order they need it. The end-to-end suites leave two
# thirds of 2 cores idle (measured: 32 % busy over the 1.37 suite's 627 s),
# and a cold run spends about 9 minutes compiling after they start: the
# second Kubernetes version's peers, fuzzing's instrumented packages, the
# release's tools.
#
# Everything lands in the caches the stages read (Go's build cache, the
# peers' and the tools' folders, each built under a lock), so that a stage
# finds it built, or waits for the one build in progress. A step that fails
# is left to the stage that needs it (it fails there, with its message), and
# the next step runs. Prints a line a step; stopped with its process group.
set -uo pipefail
cd "$(dirname "$0")/.."

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

step "vulncheck's tools" hack/tools/build.sh govulncheck indexdb
step "unit's race build" go list -race -export -deps -test ./...
step "the binaries as goreleaser builds them" env CGO_ENABLED=0 go list -trimpath -export -deps ./cmd/...
step "the snapshot's SBOM tools" hack/tools/build.sh sbom-archive cyclonedx-gomod
step "the image builder" go -C hack/tools build -o /dev/null ./oci-image
step "the end-to-end peers" test/e2e/run.sh --build-peers
step "the end-to-end suite" go list -tags e2e -export -deps -test ./test/e2e
step "the fuzz targets, instrumented" hack/fuzz.sh --build
step "the release's tools" hack/tools/build.sh
