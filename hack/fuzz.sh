#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 60s) and prints a table of
# executions and crashes. A crash leaves its input in the package's
# testdata/fuzz/<Target>/ (commit it: it becomes a regression test) and
# fails the run. A target that explores under FUZZ_MIN_RATE executions a
# second (default 5) fails too, as does one still running 120 s past its
# time: a fuzz target that tests almost nothing must not pass as tested.
#
#   hack/fuzz.sh --build  compiles each target's instrumented test binary and
#     exits (make test's compiling ahead, hack/prebuild.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
# The toolchain go.mod pins, whoever calls (make exports it; .ci/run, which
# runs this outside make, does not, and Go's own go.env may say "local"):
# the same compiler and standard library as the tests, and their cache.
GOTOOLCHAIN=$(sed -n 's/^toolchain //p' go.mod)
export GOTOOLCHAIN
fuzztime=${FUZZTIME:-60s}
min_rate=${FUZZ_MIN_RATE:-5}
seconds=${fuzztime%s}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz: FUZZTIME must be whole seconds (like 10s), not $fuzztime" >&2; exit 2; }
targets=(
  "./pkg/server/authn FuzzDecodeJWT"
  "./pkg/server/authn FuzzDecodeJWTStructured"
  "./pkg/server/authn FuzzCELPrediction"
  "./pkg/server/proxy FuzzProxyRequest"
  "./pkg/host/execcred FuzzParseRequest"
  "./pkg/credential/config FuzzParse"
  "./pkg/idp/oauth FuzzTokenResponse"
  "./pkg/idp/exchange FuzzCloudSigmaResponses"
  "./pkg/token/tokencache FuzzDecodeEntry"
  "./pkg/cluster/kubeapi FuzzDiscoveryWrites"
  "./pkg/cluster/kubeapi FuzzDiscoveryCacheDirsDistinct"
  "./pkg/host/logging FuzzEscape"
  "./pkg/cluster/rolegen FuzzGenerateGrantsOnlyWhatWasAllowed"
)
if [[ ${1:-} == --build ]]; then
  for t in "${targets[@]}"; do
    read -r pkg name <<<"$t"
    go test -c -o /dev/null -fuzz="^${name}\$" "$pkg" || exit 1
  done
  exit 0
fi
failed=0
rows=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  log=$(mktemp)
  # -fuzzminimizetime bounds the minimisation of each new interesting input
  # (60 s by default).
  # Compiled first, instrumented as -fuzz builds it, so that the bound
  # below is the fuzzing's alone.
  go test -c -o /dev/null -fuzz="^${name}\$" "$pkg" >/dev/null 2>&1
  timeout --kill-after=10 $((seconds + 120)) \
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$pkg" >"$log" 2>&1
  rc=$?
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
  crashes=0 note=""
  if [[ $rc -ne 0 ]] && grep -q "^    context deadline exceeded$" "$log" && ! grep -q "Failing input written to" "$log"; then
    # Go 1.26's fuzz coordinator can report its own -fuzztime deadline
    # as a failure when it ends the run (go.dev/issue/75804, fixed in Go
    # 1.27): no input failed; a crash or a hang writes its input and
    # fails below.
    note=" (the run ended by go.dev/issue/75804, no failing input)"
    echo "fuzz: $name: $fuzztime without a failing input; Go's coordinator reported its deadline (go.dev/issue/75804)" >&2
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
    crashes=1; failed=1; note=" (hung: still running 120 s past its time)"
    echo "fuzz: $name: still running $((seconds + 120)) s after it started; a slow input: look at the last lines" >&2
    tail -5 "$log" >&2
  elif [[ $rc -ne 0 ]]; then
    crashes=1; failed=1; tail -20 "$log" >&2
  fi
  rate=$(( ${execs:-0} / (seconds > 0 ? seconds : 1) ))
  if [[ -z $execs && $seconds -lt 10 ]]; then
    # Go reports executions every 3 s, after the seed corpus: a short run
    # may end before its first report. Not measured, not failed.
    rate="-"; note+=" (too short to measure: no report after the seed corpus)"
  elif (( rate < min_rate )); then
    failed=1; note+=" (under $min_rate execs/s)"
    echo "fuzz: $name: $rate executions a second, under FUZZ_MIN_RATE=$min_rate: make each input cheaper" >&2
  fi
  rows+=("| $name | $pkg | $fuzztime | ${execs:-0} | $rate | $crashes$note |")
  rm -f "$log"
done
echo "| target | package | time | execs | execs/s | crashes |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
