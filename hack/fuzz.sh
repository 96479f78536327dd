#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 60s) and prints a table of
# executions and crashes. A crash leaves its input in the package's
# testdata/fuzz/<Target>/ (commit it: it becomes a regression test) and
# fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
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
  "./pkg/cluster/usage FuzzGenerateGrantsOnlyWhatWasAllowed"
)
failed=0
rows=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  log=$(mktemp)
  # -fuzzminimizetime bounds the minimisation of each new interesting input
  # (60 s by default).
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
  elif [[ $rc -ne 0 ]]; then
    crashes=1; failed=1; tail -20 "$log" >&2
  fi
  rows+=("| $name | $pkg | $fuzztime | ${execs:-0} | $crashes$note |")
  rm -f "$log"
done
echo "| target | package | time | execs | crashes |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
