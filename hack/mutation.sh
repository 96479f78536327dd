#!/usr/bin/env bash
# make mutation: mutation testing of the security code (issue 46) with
# gremlins (pinned in hack/tools/mutation), one package at a time, each
# package's own tests against the mutants of the files named below. Test
# efficacy (killed ÷ killed + lived) must be at least MUTATION_FLOOR (90)
# in every package; the mutants that lived are listed as file:line. Each
# package is bounded by MUTATION_TIMEOUT (600 s).
#
# A package's result is kept in hack/mutation-record.tsv with the hash of
# everything it was measured on (its inputs, below): a package whose inputs
# are unchanged since its recorded run is not run again, as StrykerJS's
# incremental mode reuses unchanged results; its recorded score still meets
# the floor or fails. A run updates the record (commit it). MUTATION_ALL=1
# runs every package (make mutation-all).
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
  "pkg/server/sudo sudo.go store.go tokenrequest.go controller.go authorizer.go"
)
record=hack/mutation-record.tsv
# This module alone: a go.work elsewhere would add others to it.
export GOWORK=off LC_ALL=C
# inputs PACKAGE FILES: the hash of what a package's result depends on: the
# tracked files in the folder of every package of this module its tests
# build with, the files its tests name by a relative path inside the
# repository (such as a CRD under deploy/), the mutated files' list, go.mod
# and go.sum (the other modules), this script, gremlins' pins, the Go
# version and platform, and the tests' own KI_ switches. It fails when a
# path cannot be listed, and says "dirty" when one of those folders holds
# an untracked or changed file: such a tree is measured, never recorded.
inputs() {
  local pkg=$1 files=$2 dirs rels list
  dirs=$(go list -deps -test -f '{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}' "./$pkg") || return 1
  dirs=$(sed "s|^$PWD/||" <<<"$dirs" | sort -u)
  rels=$(grep -ohE '"(\.\./)+[A-Za-z0-9_./-]+"' "$pkg"/*_test.go 2>/dev/null | tr -d '"' |
    while read -r rel; do realpath -m --relative-to=. "$pkg/$rel"; done | grep -v '^\.\.' | sort -u)
  # shellcheck disable=SC2086 # one path per word
  list=$(git ls-files -- $dirs $rels go.mod go.sum hack/mutation.sh hack/tools/mutation/go.sum) || return 1
  # shellcheck disable=SC2086
  if [[ -n $(git status --porcelain -- $dirs $rels) ]]; then
    echo dirty
    return
  fi
  {
    xargs -d '\n' sha256sum <<<"$list" || return 1
    echo "$files"
    go env GOVERSION GOOS GOARCH CGO_ENABLED GOEXPERIMENT
    env | sed -n '/^KI_/p' | sort
  } | sha256sum | cut -c1-16
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
touch "$record"
# score KILLED LIVED: the efficacy in percent, one decimal (100.0 with no
# mutant); meets EFFICACY: at least the floor.
score() { python3 -c "k, l = $1, $2; print(f'{100 * k / (k + l):.1f}' if k + l else '100.0')"; }
meets() { python3 -c "import sys; sys.exit(0 if float('$1') >= $floor else 1)"; }
# forget PACKAGE: its recorded result dropped.
forget() {
  awk -v p="$1" '$1 != p' "$record" >"$out/record" && cat "$out/record" >"$record"
}
failed=0 ran=0 kept=0
rows=()
for t in "${targets[@]}"; do
  read -r pkg files <<<"$t"
  # hack/mutation.sh PACKAGE... runs those alone.
  if [[ $# -gt 0 && " $* " != *" $pkg "* ]]; then continue; fi
  hash=$(inputs "$pkg" "$files") || { echo "mutation: $pkg: listing its inputs failed" >&2; failed=1; continue; }
  if [[ $hash != dirty && ${MUTATION_ALL:-} != 1 ]] && read -r _ _ killed lived day < <(awk -v p="$pkg" -v h="$hash" '$1 == p && $2 == h' "$record"); then
    efficacy=$(score "$killed" "$lived")
    verdict="ok, unchanged since $day"
    meets "$efficacy" || { verdict="below $floor % ($day)"; failed=1; }
    rows+=("| $pkg | $killed | $lived | $efficacy % | $verdict | 0 s |")
    kept=$((kept + 1))
    continue
  fi
  ran=$((ran + 1))
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
    forget "$pkg"
    continue
  fi
  read -r killed lived < <(python3 - "$json" "$pkg" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k, l = d["mutants_killed"], d["mutants_lived"]
for f in d["files"]:
    for m in f["mutations"]:
        if m["status"] == "LIVED":
            print(f"mutation: lived: {sys.argv[2]}/{f['file_name']}:{m['line']}:{m['column']} {m['type']}", file=sys.stderr)
print(k, l)
PY
)
  efficacy=$(score "$killed" "$lived")
  verdict=ok
  if ! meets "$efficacy"; then
    verdict="below $floor %"
    failed=1
  fi
  rows+=("| $pkg | $killed | $lived | $efficacy % | $verdict | ${secs} s |")
  # A result is kept only when it passed, on a clean tree; a failed one
  # also forgets what an earlier run kept.
  if [[ $verdict != ok ]]; then
    forget "$pkg"
  elif [[ $hash != dirty ]]; then
    forget "$pkg"
    printf '%s\t%s\t%s\t%s\t%s\n' "$pkg" "$hash" "$killed" "$lived" "$(date -u +%F)" >>"$record"
    sort -o "$record" "$record"
  else
    echo "mutation: $pkg: not recorded (its inputs hold uncommitted changes: commit, then run again)" >&2
  fi
done
echo "mutation: $ran packages run, $kept unchanged since their recorded run (MUTATION_ALL=1 runs them all)"
if [[ -n $(git status --porcelain -- "$record" 2>/dev/null) ]]; then
  echo "mutation: $record has new results: commit it"
fi
echo
echo "| package | killed | lived | efficacy | verdict | time |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
exit $failed
