#!/usr/bin/env bash
# A/B of two revisions' binaries, in one hyperfine invocation per path so
# that the machine's drift between two `make bench` runs does not decide:
# the cached get-token (disk, the fast binary), the full binary's start-up
# (version), the refresh path and a browser login against test/bench/idp
# (curl stands in for the browser). For a change that must not slow
# anything (a refactor): each row's "after / before" is printed, and the
# script fails when one is over --max (default 1.10).
#
# Usage: hack/bench-ab.sh BEFORE [AFTER] [--max RATIO] [--runs N]
#        (revisions as git names them; AFTER defaults to the work tree)
set -euo pipefail
cd "$(dirname "$0")/.."
before="" after="" max=1.10 runs=300
while [ $# -gt 0 ]; do
  case "$1" in
    --max) max="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) if [ -z "$before" ]; then before="$1"; else after="$1"; fi; shift ;;
  esac
done
[ -n "$before" ] || { echo "usage: hack/bench-ab.sh BEFORE [AFTER] [--max RATIO] [--runs N]" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "bench-ab: install hyperfine (Debian package)" >&2; exit 1; }

work="$(mktemp -d)"
idp_pid=""
cleanup() {
  [ -n "$idp_pid" ] && kill "$idp_pid" 2>/dev/null || true
  for v in before after; do [ -d "$work/src-$v" ] && git worktree remove --force "$work/src-$v" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

build() { # build REV-or-empty NAME: the release flags of make bench
  local src=.
  if [ -n "$1" ]; then git worktree add -q --detach "$work/src-$2" "$1"; src="$work/src-$2"; fi
  mkdir -p "$work/$2"
  for b in kubectl-impersonate kubectl-impersonate-get_token kubectl-impersonate-apiserver; do
    (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/$2/$b" "./cmd/$b")
  done
  echo "bench-ab: $2 = ${1:-the work tree} ($(git -C "$src" rev-parse --short HEAD))" >&2
}
build "$before" before
build "$after" after
go build -o "$work/idp" ./test/bench/idp

export HOME="$work/home"
mkdir -p "$HOME"
"$work/idp" > "$work/idp.env" &
idp_pid=$!
for _ in $(seq 50); do [ -s "$work/idp.env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$work/idp.env"
common="--oidc-issuer-url=$ISSUER --oidc-client-id=$CLIENT_ID --oidc-extra-scope=email --oidc-extra-scope=groups --listen-address=127.0.0.1:0"
browser='--browser-command=curl -sfL -o /dev/null'
for v in before after; do
  # shellcheck disable=SC2086
  "$work/$v/kubectl-impersonate" login $common --token-cache-storage=disk --token-cache-dir="$work/disk-$v" "$browser" >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$work/$v/kubectl-impersonate" login $common --token-cache-storage=disk --token-cache-dir="$work/refresh-$v" "$browser" >/dev/null 2>&1
  entry="$(ls "$work/refresh-$v"/*.json)"
  "$work/idp" expire "$entry"
  cp "$entry" "$work/expired-$v.json"
  echo "$entry" > "$work/entry-$v"
done
export KUBERNETES_EXEC_INFO='{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}'
ab() { # ab NAME HYPERFINE-OPTIONS... -- COMMAND-BEFORE COMMAND-AFTER
  local name="$1"; shift
  hyperfine "$@" --style none --export-json "$work/$name.json" >/dev/null
}
# shellcheck disable=SC2086
ab cached -N --warmup 30 --runs "$runs" -n "get-token (disk) before" "$work/before/kubectl-impersonate-get_token $common --token-cache-storage=disk --token-cache-dir=$work/disk-before" \
  -n "get-token (disk) after" "$work/after/kubectl-impersonate-get_token $common --token-cache-storage=disk --token-cache-dir=$work/disk-after"
ab version -N --warmup 30 --runs "$runs" -n "full binary version before" "env -u KUBERNETES_EXEC_INFO $work/before/kubectl-impersonate version" \
  -n "full binary version after" "env -u KUBERNETES_EXEC_INFO $work/after/kubectl-impersonate version"
ab slow --warmup 5 --runs 100 \
  -n "get-token (refresh) before" --prepare "cp $work/expired-before.json $(cat "$work/entry-before")" "$work/before/kubectl-impersonate get-token $common --token-cache-storage=disk --token-cache-dir=$work/refresh-before" \
  -n "get-token (refresh) after" --prepare "cp $work/expired-after.json $(cat "$work/entry-after")" "$work/after/kubectl-impersonate get-token $common --token-cache-storage=disk --token-cache-dir=$work/refresh-after" \
  -n "login (browser, no cache) before" --prepare true "env -u KUBERNETES_EXEC_INFO $work/before/kubectl-impersonate login --force $common --token-cache-storage=none --token-cache-dir=$work/none '$browser'" \
  -n "login (browser, no cache) after" --prepare true "env -u KUBERNETES_EXEC_INFO $work/after/kubectl-impersonate login --force $common --token-cache-storage=none --token-cache-dir=$work/none '$browser'"
python3 - "$max" "$work/cached.json" "$work/version.json" "$work/slow.json" <<'PY'
import json, sys
limit = float(sys.argv[1])
med = {}
for f in sys.argv[2:]:
    for r in json.load(open(f))["results"]:
        med[r["command"]] = r["median"]
print("| path | before ms | after ms | after / before |")
print("| --- | --- | --- | --- |")
worst = 0
for name in [c[: -len(" before")] for c in med if c.endswith(" before")]:
    b, a = med[name + " before"], med[name + " after"]
    worst = max(worst, a / b)
    print(f"| {name} | {b*1000:.2f} | {a*1000:.2f} | {a/b:.2f} |")
if worst > limit:
    sys.exit(f"bench-ab: a path is {worst:.2f} x its time before, over {limit}")
PY
