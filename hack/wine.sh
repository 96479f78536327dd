#!/usr/bin/env bash
# Windows under Wine, for the tests (shared/README.md §9 has the facts):
#   hack/wine.sh prefix DIR  makes a fresh Wine prefix in DIR (wineboot -i,
#                            about 10 s) with the harness's forwarding
#                            bcryptprimitives.dll (test/wine/bcryptdll):
#                            Debian 12's Wine 8.0 lacks ProcessPrng, which
#                            every Go >= 1.22 program loads at start.
#   hack/wine.sh unit        runs pkg/host/safefile's tests built for Windows
#                            under Wine, with another Unix user's file and
#                            directory planted for the owner check.
# Installs Debian's wine64 and wine (without recommends: those upgrade
# Mesa packages Chromium uses) when missing, as root.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "wine: $*" >&2; exit 1; }

install_wine() {
  command -v wine >/dev/null && command -v wineboot >/dev/null && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    fail "wine is missing: install the Debian packages wine64 and wine (apt-get install --no-install-recommends wine64 wine)"
  fi
  echo "wine: installing wine64 and wine (Debian packages; about 30 s)" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64 wine >/dev/null \
    || fail "could not install wine64 and wine"
}

make_prefix() { # DIR
  local dir=$1 start=$SECONDS
  install_wine
  rm -rf "$dir" && mkdir -p "$dir"
  WINEPREFIX="$dir" WINEDEBUG=-all timeout 120 wineboot -i >/dev/null 2>&1 || fail "wineboot -i in $dir failed"
  WINEPREFIX="$dir" timeout 30 wineserver -w || true
  go run ./test/wine/bcryptdll "$dir/drive_c/windows/system32/bcryptprimitives.dll"
  echo "wine: prefix $dir made in $((SECONDS - start)) s ($(wine --version 2>/dev/null))" >&2
}

work=""
unit() {
  local status=0
  work="$(mktemp -d)"
  trap 'WINEPREFIX="$work/prefix" wineserver -k 2>/dev/null || true; rm -rf "$work"' EXIT
  make_prefix "$work/prefix"
  GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -c -o "$work/safefile.test.exe" ./pkg/host/safefile
  # Another Unix user's file and directory: Wine reports their owner as
  # Anonymous (S-1-5-7), and keeps no owner a Windows program sets.
  local foreign=""
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$work/foreign/d" && echo x > "$work/foreign/f"
    chmod 600 "$work/foreign/f" && chmod 700 "$work/foreign/d" && chown -R 65534:65534 "$work/foreign"
    foreign="Z:${work//\//\\}\\foreign"
  fi
  KI_TEST_FOREIGN="$foreign" WINEPREFIX="$work/prefix" WINEDEBUG=-all \
    timeout 300 wine "$work/safefile.test.exe" -test.v -test.count=1 2>&1 | tee "$work/safefile.log" | grep -E '^(---|===|ok|PASS|FAIL|\s+platform)' || true
  grep -q '^PASS$' "$work/safefile.log" || status=1
  [ "$status" = 0 ] || { echo "wine: pkg/host/safefile's tests failed under Wine:" >&2; tail -40 "$work/safefile.log" >&2; }
  return "$status"
}

case "${1:-}" in
  prefix) [ -n "${2:-}" ] || fail "usage: hack/wine.sh prefix DIR"; make_prefix "$2" ;;
  unit) unit ;;
  *) fail "usage: hack/wine.sh prefix DIR | unit" ;;
esac
