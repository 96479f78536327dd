#!/usr/bin/env bash
# Benchmarks the impersonating proxy's own cost per request with sudo
# (pkg/server/proxy's BenchmarkProxySudo: authentication from the cache, no
# network upstream) side by side: as today, with 1,000 live grants watched
# and a request without one, a request under one of them, and a request
# under the one grant of a view holding no other; and the heap
# a replica holds per live grant (BenchmarkSudoStoreMemory). Medians of
# COUNT runs (default 10) are written between the bench markers of
# docs/elevation.md. Run it on a quiet machine: make bench runs it.
#
# Usage: hack/bench-sudo.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "bench-sudo: go test -bench 'ProxySudo|SudoStoreMemory' -count $count ./pkg/server/proxy/" >&2
go test -run '^$' -bench 'BenchmarkProxySudo|BenchmarkSudoStoreMemory' -benchtime 5000x -count "$count" \
  ./pkg/server/proxy/ > "$out"
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ns() { grep "^BenchmarkProxySudo/$1-" "$out" | awk '{print $3}' | median; }
today="$(ns today)"; plain="$(ns 1000-grants-plain)"; elevated="$(ns 1000-grants-elevated)"; one="$(ns 1-grant-elevated)"
grant="$(grep '^BenchmarkSudoStoreMemory' "$out" | awk '{for (i=1;i<=NF;i++) if ($(i+1)=="B/grant") print $i}' | median)"
pct() { awk -v a="$1" -v b="${2:-$today}" 'BEGIN {printf "%+.1f %%", (a-b)*100/b}'; }
table="$(cat <<TABLE
| request through the proxy (median of $count runs of 5,000) | µs | against today |
| --- | --- | --- |
| as today (no \`--sudo\`) | $(awk -v v="$today" 'BEGIN {printf "%.1f", v/1000}') | |
| \`--sudo\`, 1,000 live grants, a request without one | $(awk -v v="$plain" 'BEGIN {printf "%.1f", v/1000}') | $(pct "$plain") |
| \`--sudo\`, 1,000 live grants, a request under one | $(awk -v v="$elevated" 'BEGIN {printf "%.1f", v/1000}') | $(pct "$elevated") |
| \`--sudo\`, 1 live grant, a request under it | $(awk -v v="$one" 'BEGIN {printf "%.1f", v/1000}') | $(pct "$one") |

A request under a grant with 1,000 live grants against 1: $(pct "$elevated" "$one").

Memory: $(awk -v v="$grant" 'BEGIN {printf "%.0f", v}') bytes of heap a live grant with its request ($(go env GOARCH), $(go version | awk '{print $3}')).
TABLE
)"
echo "$table"
python3 - "$table" <<'PY'
import re, sys
p = "docs/elevation.md"
s = open(p).read()
begin, end = "<!-- bench-sudo: begin -->", "<!-- bench-sudo: end -->"
if begin not in s:
    sys.exit("bench-sudo: docs/elevation.md has no bench markers")
s = s[:s.index(begin) + len(begin)] + "\n" + sys.argv[1] + "\n" + s[s.index(end):]
open(p, "w").write(s)
PY
echo "bench-sudo: wrote docs/elevation.md" >&2
