#!/usr/bin/env bash
# make mutation: mutation testing of the security code (issue 46) with
# gremlins (pinned in hack/tools/mutation), one package at a time, each
# package's own tests against the mutants of the files named below. Test
# efficacy (killed ÷ killed + lived) must be at least MUTATION_FLOOR (90)
# in every package; the mutants that lived are listed as file:line. Each
# package is bounded by MUTATION_TIMEOUT (600 s).
set -uo pipefail
cd "$(dirname "$0")/.."
floor=${MUTATION_FLOOR:-90}
limit=${MUTATION_TIMEOUT:-600}
GOTOOLCHAIN=$(sed -n 's/^toolchain //p' go.mod)
export GOTOOLCHAIN
# gremlins times each mutant by its first (coverage) run: cached, that
# takes nothing and every mutant would time out; and each mutant is
# compiled anew, which the first run was not (coefficient 10).
export GOFLAGS="-buildvcs=false -count=1"
key="$(cat hack/tools/mutation/go.sum hack/mutation.sh | sha256sum | cut -c1-16)-$(go env GOVERSION)"
bin="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/mutation-$key"
if [[ ! -x $bin/gremlins ]]; then
  echo "mutation: building gremlins (hack/tools/mutation)" >&2
  (cd hack/tools/mutation && CGO_ENABLED=0 go build -trimpath -o "$bin/" github.com/go-gremlins/gremlins/cmd/gremlins) || exit 1
fi
# package: the files whose mutants count (the security rules it owns).
targets=(
  "pkg/host/safefile access.go access_unix.go read.go safefile.go"
  "pkg/cluster/kubeapi validate.go decodecost.go client.go discovery.go"
  "pkg/host/logging logging.go writer.go"
  "pkg/credential/settings trust.go"
  "pkg/token/credspec servers.go gate.go cluster.go"
  "pkg/host/execcred execcred.go caller.go procargs.go parent_linux.go"
  "pkg/cmd/util complete.go"
  "pkg/credential/session gate.go"
  "pkg/host/kuberc kuberc.go"
  "pkg/server/recorder recorder.go"
  "pkg/cluster/auditlog read.go request.go seal.go"
  "pkg/cluster/rolegen rolegen.go"
  "pkg/cluster/risk risk.go checks.go"
  "pkg/server/identity identity.go"
  "pkg/idp/oauth oauth.go assertion.go retry.go"
  "pkg/token/tokencache disk.go entry.go key.go keyring.go store.go cooldown.go lock.go"
  "pkg/cluster/elevation elevation.go direct.go"
  "pkg/server/sudo sudo.go store.go tokenrequest.go controller.go"
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
rows=()
for t in "${targets[@]}"; do
  read -r pkg files <<<"$t"
  # hack/mutation.sh PACKAGE... runs those alone.
  if [[ $# -gt 0 && " $* " != *" $pkg "* ]]; then continue; fi
  excludes=()
  for f in "$pkg"/*.go; do
    name=$(basename "$f")
    [[ $name == *_test.go ]] && continue
    [[ " $files " == *" $name "* ]] && continue
    excludes+=(-E "(^|/)${name//./\\.}\$")
  done
  json="$out/$(echo "$pkg" | tr / _).json"
  start=$SECONDS
  timeout "$limit" "$bin/gremlins" unleash "./$pkg" --workers 2 --timeout-coefficient 10 "${excludes[@]}" -o "$json" -s >/dev/null 2>"$out/err"
  rc=$?
  secs=$((SECONDS - start))
  if [[ $rc -ne 0 || ! -s $json ]]; then
    echo "mutation: $pkg: gremlins failed (exit $rc) in ${secs}s: $(tail -3 "$out/err")" >&2
    rows+=("| $pkg | - | - | - | failed (exit $rc) | ${secs} s |")
    failed=1
    continue
  fi
  read -r killed lived efficacy < <(python3 - "$json" "$pkg" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k, l = d["mutants_killed"], d["mutants_lived"]
for f in d["files"]:
    for m in f["mutations"]:
        if m["status"] == "LIVED":
            print(f"mutation: lived: {sys.argv[2]}/{f['file_name']}:{m['line']}:{m['column']} {m['type']}", file=sys.stderr)
print(k, l, f"{100 * k / (k + l):.1f}" if k + l else "100.0")
PY
)
  verdict=ok
  if ! python3 -c "import sys; sys.exit(0 if float('$efficacy') >= $floor else 1)"; then
    verdict="below $floor %"
    failed=1
  fi
  rows+=("| $pkg | $killed | $lived | $efficacy % | $verdict | ${secs} s |")
done
echo
echo "| package | killed | lived | efficacy | verdict | time |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
