#!/usr/bin/env bash
# make vulncheck: govulncheck in source mode on the packages of the
# plugin's binaries (./cmd/...), against a database written by indexdb from
# golang.org/x/vulndb at the version hack/tools/vuln/go.mod pins (the
# public vuln.go.dev is out of reach where make test runs); then on
# test/vulnfixture, which calls a function GO-2022-1059 names and must be
# reported: a check that cannot fail proves nothing. Prints the database's
# date and the Go version the check ran with (the standard library's
# vulnerabilities are the toolchain's: go.mod pins it, the Makefile uses
# it). Exits 1 when a vulnerability is reachable, govulncheck's report
# naming each GO-ID and the version that fixes it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(hack/tools/build.sh govulncheck indexdb)
mod=$(go -C hack/tools/vuln mod download -json golang.org/x/vulndb)
version=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Version"])' <<<"$mod")
src=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' <<<"$mod")
db="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/vulndb-$version"
if [[ ! -f $db/.complete ]]; then
  rm -rf "$db"
  "$tools/indexdb" -vulns "$src/data/osv" -out "$db"
  touch "$db/.complete"
fi
# The repository's OSV files carry no dates (vuln.go.dev's are set when it
# deploys): the database is as of its commit, the pseudo-version's time. A
# database older than VULNDB_MAX_AGE_DAYS (the Makefile names it) fails
# the check: it would miss what was published since.
about=$(python3 - "$version" "$src/data/osv" "${VULNDB_MAX_AGE_DAYS:-45}" <<'PY'
import datetime, glob, os, sys
stamp = sys.argv[1].split("-")[1]
when = datetime.datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=datetime.timezone.utc)
age = (datetime.datetime.now(datetime.timezone.utc) - when).days
ids = sorted(os.path.basename(f)[:-5] for f in glob.glob(sys.argv[2] + "/GO-*.json"))
print(f"as of {when:%Y-%m-%d %H:%M} UTC ({age} days old, at most {sys.argv[3]}): {len(ids)} entries, the newest {ids[-1]}")
sys.exit(3 if age > int(sys.argv[3]) else 0)
PY
) || {
  echo "vulncheck: golang.org/x/vulndb $version, $about" >&2
  echo "vulncheck: the vulnerability database is older than VULNDB_MAX_AGE_DAYS: refresh it with \"make vulndb-update\" (then commit hack/tools/vuln/go.mod and go.sum)" >&2
  exit 1
}
echo "vulncheck: golang.org/x/vulndb $version, $about; $(go env GOVERSION)"
if ! "$tools/govulncheck" -db "file://$db" ./cmd/...; then
  echo "vulncheck: a known vulnerability is reachable from the plugin's binaries (above): upgrade the module to its fixed version (go get MODULE@VERSION), or the toolchain in go.mod for the standard library's" >&2
  exit 1
fi
rc=0
out=$(cd test/vulnfixture && "$tools/govulncheck" -db "file://$db" ./... 2>&1) || rc=$?
if [[ $rc -ne 3 ]] || ! grep -q 'GO-2022-1059' <<<"$out"; then
  echo "$out" >&2
  echo "vulncheck: test/vulnfixture calls a function GO-2022-1059 names, and govulncheck did not report it (exit $rc): the check cannot be trusted" >&2
  exit 1
fi
echo "vulncheck: test/vulnfixture is reported as it must be (GO-2022-1059, exit 3)"
