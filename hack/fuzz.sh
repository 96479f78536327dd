#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 60s) and prints a table of
# executions and crashes. A crash leaves its input in the package's
# testdata/fuzz/<Target>/ (commit it: it becomes a regression test) and
# fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
targets=(
  "./pkg/authn FuzzDecodeJWT"
  "./pkg/authn FuzzDecodeJWTStructured"
  "./pkg/authn FuzzCELPrediction"
  "./pkg/proxy FuzzProxyRequest"
  "./pkg/execcred FuzzParseRequest"
  "./pkg/config FuzzParse"
  "./pkg/oauth FuzzTokenResponse"
  "./pkg/exchange FuzzCloudSigmaResponses"
  "./pkg/tokencache FuzzDecodeEntry"
)
failed=0
rows=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  log=$(mktemp)
  # -fuzzminimizetime bounds the minimisation of each new interesting input
  # (60 s by default): a run whose time ends during one fails with "context
  # deadline exceeded" and no input (Go's engine, not a crash). That case
  # alone is run once more; a real crash writes its input and fails.
  for attempt in 1 2; do
    go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=2s "$pkg" >"$log" 2>&1
    rc=$?
    if [[ $rc -ne 0 && $attempt -eq 1 ]] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written to" "$log"; then
      echo "fuzz: $name: the engine timed out with no failing input; running it once more" >&2
      continue
    fi
    break
  done
  execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+')
  crashes=0
  if [[ $rc -ne 0 ]]; then crashes=1; failed=1; tail -20 "$log" >&2; fi
  rows+=("| $name | $pkg | $fuzztime | ${execs:-0} | $crashes |")
  rm -f "$log"
done
echo "| target | package | time | execs | crashes |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
