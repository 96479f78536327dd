#!/usr/bin/env bash
# Benchmarks kubectl-impersonate's get-token the way kubectl runs it, against
# a Go hello world built in the same run: the cached path on disk and in the
# OS keyring (gnome-keyring's Secret Service in a private D-Bus session), the
# refresh path and the full login path against the in-process test provider
# (test/bench/idp; curl stands in for the browser). Prints a table of medians
# (hyperfine) and peak RSS. Not a test: numbers, for the README and notes.
#
# Usage: hack/bench.sh [RUNS]   (default 500 runs of each cached command)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-${RUNS:-500}}"

need() { command -v "$1" >/dev/null 2>&1; }
install_pkgs() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then echo "bench: install ${missing[*]} (Debian packages)" >&2; exit 1; fi
  echo "bench: installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

if [ -z "${BENCH_INSIDE:-}" ]; then
  install_pkgs hyperfine curl dbus gnome-keyring time
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/home" "$work/run" && chmod 700 "$work/run"
  echo "bench: building (release flags) into $work" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/kubectl-impersonate" ./cmd/kubectl-impersonate
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/kubectl-impersonate-get_token" ./cmd/kubectl-impersonate-get_token
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/hello" ./test/bench/hello
  go build -o "$work/idp" ./test/bench/idp
  # A private D-Bus session and keyring: nothing of the user's is touched.
  exec env -i PATH="$PATH" HOME="$work/home" XDG_RUNTIME_DIR="$work/run" BENCH_INSIDE=1 BENCH_WORK="$work" RUNS="$RUNS" \
    dbus-run-session -- bash "$0"
fi

work="$BENCH_WORK"
eval "$(printf 'bench' | gnome-keyring-daemon --unlock --components=secrets)"
export GNOME_KEYRING_CONTROL
"$work/idp" > "$work/idp.env" &
idp_pid=$!
stop_all() {
  kill "$idp_pid" 2>/dev/null || true
  # The keyring daemon of this private session, and nothing else.
  for pid in $(pgrep -u "$(id -u)" gnome-keyring 2>/dev/null); do
    grep -qs "BENCH_WORK=$work" "/proc/$pid/environ" && kill "$pid" 2>/dev/null || true
  done
}
trap stop_all EXIT
for _ in $(seq 50); do [ -s "$work/idp.env" ] && break; sleep 0.1; done
# shellcheck disable=SC1091
. "$work/idp.env"

ki="$work/kubectl-impersonate"
fast="$work/kubectl-impersonate-get_token"
common="--oidc-issuer-url=$ISSUER --oidc-client-id=$CLIENT_ID --oidc-extra-scope=email --oidc-extra-scope=groups --listen-address=127.0.0.1:0"
browser='--browser-command=curl -sfL -o /dev/null'
disk="$common --token-cache-storage=disk --token-cache-dir=$work/disk"
keyring="$common --token-cache-storage=keyring --token-cache-dir=$work/locks"
refresh="$common --token-cache-storage=disk --token-cache-dir=$work/refresh"
export KUBERNETES_EXEC_INFO='{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}'

# shellcheck disable=SC2086
"$ki" login $disk "$browser" >/dev/null
# shellcheck disable=SC2086
"$ki" login $keyring "$browser" >/dev/null
# shellcheck disable=SC2086
"$ki" login $refresh "$browser" >/dev/null
entry="$(ls "$work"/refresh/*.json)"
"$work/idp" expire "$entry"
cp "$entry" "$work/expired.json"
# shellcheck disable=SC2086
"$ki" get-token $keyring >/dev/null || { echo "bench: keyring get-token failed" >&2; exit 1; }

echo "bench: $RUNS runs each of the cached paths" >&2
hyperfine -N --style none --warmup 30 --runs "$RUNS" --export-json "$work/cached.json" \
  -n hello "$work/hello" \
  -n "get-token (disk)" "$fast $disk" \
  -n "get-token (keyring)" "$fast $keyring" \
  -n "full binary get-token (disk)" "$ki get-token $disk" >/dev/null
hyperfine --style none --warmup 5 --runs 100 --export-json "$work/slow.json" \
  -n "get-token (refresh)" --prepare "cp $work/expired.json $entry" "$ki get-token $refresh" \
  -n "login (browser, no cache)" "$ki login --force $common --token-cache-storage=none --token-cache-dir=$work/none '$browser'" >/dev/null \
  || echo "bench: the refresh/login runs failed" >&2

rss() { # median peak RSS in KiB over 21 runs
  for _ in $(seq 21); do /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; done | sort -n | sed -n 11p
}
rss_hello=$(rss "$work/hello")
# shellcheck disable=SC2086
rss_disk=$(rss "$fast" $disk)
# shellcheck disable=SC2086
rss_keyring=$(rss "$fast" $keyring)

export RSS_HELLO=$rss_hello RSS_DISK=$rss_disk RSS_KEYRING=$rss_keyring
python3 - "$work/cached.json" "$work/slow.json" <<'PY' 2>/dev/null || cat "$work/cached.json"
import json, os, sys
rows = []
for f in sys.argv[1:]:
    try:
        rows += json.load(open(f))["results"]
    except Exception:
        pass
hello = next(r["median"] for r in rows if r["command"] == "hello")
rss = {"hello": os.environ["RSS_HELLO"], "get-token (disk)": os.environ["RSS_DISK"], "get-token (keyring)": os.environ["RSS_KEYRING"]}
disk = next((r["median"] for r in rows if r["command"] == "get-token (disk)"), None)
print(f"{'command':28} {'median ms':>10} {'p95 ms':>8} {'x hello':>8} {'x disk':>7} {'max RSS MiB':>12}")
for r in rows:
    times = sorted(r["times"])
    p95 = times[int(len(times) * 0.95) - 1]
    m = r["median"]
    rs = f"{int(rss[r['command']]) / 1024:.1f}" if r["command"] in rss else "-"
    xd = f"{m / disk:.2f}" if disk else "-"
    print(f"{r['command']:28} {m * 1000:10.2f} {p95 * 1000:8.2f} {m / hello:8.2f} {xd:>7} {rs:>12}")
PY

# Request counts of the access matrix (not a timing: from the unit test that
# asserts them against a stand-in authorizer; the e2e figures are in
# docs/inspection.md).
( cd "$(dirname "$0")/.." && go test -count=1 -run '^TestAccessRequestCounts$' -v ./pkg/rbac 2>/dev/null \
  | grep -o 'access matrix.*' ) || echo "bench: the access matrix count failed" >&2
