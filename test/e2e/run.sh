#!/usr/bin/env bash
# Runs the end-to-end tests on real peers: kube-apiserver + etcd, Dex,
# oidc-provider, kubectl, the Python and JavaScript Kubernetes clients,
# gnome-keyring's Secret Service (in a private D-Bus session), headless
# Chromium, and podman running the proxy's image (KI_IMAGE_DIST:
# make e2e builds it first). Installs the Debian packages it needs when missing
# (as root), builds the pinned peers once per version (test/e2e/tools), and
# keeps every log under a folder printed at the end.
#
# The whole suite runs once per Kubernetes version in E2E_K8S_VERSIONS
# (default: the newest and the oldest supported release, "1.37 1.35"); each
# needs a wrapper module test/e2e/tools/kube-MINOR. A version's peers are
# built just before its suite.
#
#   run.sh --build-later-peers  builds the peers of every version but the
#     first and exits (make test's compiling ahead, hack/prebuild.sh, while
#     the first version's suite runs): no Debian package, no npm.
#
# When make test runs it (hack/stages.sh), KI_IDLE_SIGNAL names the file that
# starts hack/prebuild.sh: created once the first suite is compiled.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "e2e: $*" >&2; exit 1; }

versions="${E2E_K8S_VERSIONS:-1.37 1.35}"
# The Windows job (test/e2e/windows_test.go) runs with the first version:
# Wine from Debian (hack/wine.sh installs it) and kubectl.exe built with it.
first="${versions%% *}"
declare -A tools
peers() { # MINOR: builds its peers (cached) into tools[MINOR]
  local win=0
  [ "$1" = "$first" ] && win=1
  tools[$1]="$(KI_E2E_WINDOWS=$win test/e2e/tools/build.sh "$1")" \
    || fail "building the pinned kube-apiserver $1, kubectl and Dex failed"
}
if [ "${1:-}" = --build-later-peers ]; then
  for v in $versions; do [ "$v" = "$first" ] || peers "$v"; done
  exit 0
fi

# Debian packages: binary -> package.
declare -A pkgs=([gnome-keyring-daemon]=gnome-keyring [dbus-run-session]=dbus
  [chromium]=chromium [secret-tool]=libsecret-tools [curl]=curl [podman]=podman [runc]=runc)
missing=()
for b in "${!pkgs[@]}"; do command -v "$b" >/dev/null 2>&1 || missing+=("${pkgs[$b]}"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    fail "missing ${missing[*]}: install these Debian packages (apt-get install ${missing[*]})"
  fi
  echo "e2e: installing ${missing[*]} (Debian packages; chromium takes ~20 s)" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || fail "could not install ${missing[*]}"
fi
for b in "${!pkgs[@]}"; do command -v "$b" >/dev/null 2>&1 || fail "$b is still missing after installing ${pkgs[$b]}"; done
# bash-completion, which kubectl's bash completion script needs (as a
# user's shell has it): TestGateThroughKubectl sources both.
if [ ! -r /usr/share/bash-completion/bash_completion ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail "missing bash-completion: install this Debian package (apt-get install bash-completion)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bash-completion >/dev/null \
    || fail "could not install bash-completion"
fi
# The Kubernetes Python client as Debian ships it (python3-kubernetes),
# for Debian's own python3.
if ! /usr/bin/python3 -c "import kubernetes" 2>/dev/null; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    fail "the Kubernetes Python client is missing: install the Debian package python3-kubernetes"
  fi
  echo "e2e: installing python3-kubernetes (Debian package)" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-kubernetes >/dev/null \
    || fail "could not install python3-kubernetes"
fi

peers "$first"

# The Firebase Auth emulator: the real peer for Identity Platform's
# signInWithIdp and securetoken refresh (npm package firebase-tools).
firebase_version=15.34.2
firebase_dir="${KI_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-e2e}/firebase-tools-$firebase_version"
if [ ! -x "$firebase_dir/node_modules/.bin/firebase" ]; then
  command -v npm >/dev/null || fail "npm is missing: install Node.js and npm (Debian: apt-get install nodejs npm)"
  echo "e2e: installing firebase-tools $firebase_version from npm (once; about 3 minutes)" >&2
  mkdir -p "$firebase_dir"
  npm install --prefix "$firebase_dir" --no-audit --no-fund --loglevel=error "firebase-tools@$firebase_version" >&2 \
    || fail "could not install firebase-tools from npm"
fi
# The Node.js peers, pinned by test/e2e/node/package-lock.json: panva's
# oidc-provider (the second certified provider) and the Kubernetes
# JavaScript client (@kubernetes/client-node).
node_dir="${KI_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-e2e}/node-peers-$(sha256sum test/e2e/node/package-lock.json | cut -c1-12)"
if [ ! -f "$node_dir/node_modules/.package-lock.json" ]; then
  command -v npm >/dev/null || fail "npm is missing: install Node.js and npm (Debian: apt-get install nodejs npm)"
  echo "e2e: installing oidc-provider and @kubernetes/client-node from npm (once; about 10 seconds)" >&2
  rm -rf "$node_dir" && mkdir -p "$node_dir"
  cp test/e2e/node/package.json test/e2e/node/package-lock.json "$node_dir/"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || { rm -rf "$node_dir"; fail "could not install test/e2e/node's packages from npm"; }
fi
logs="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-impersonate-e2e-logs.XXXXXX")"
session="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-impersonate-e2e-session.XXXXXX")"
mkdir -p "$session/home" "$session/run" && chmod 700 "$session/run"
# The tests' D-Bus session bus: Debian's session configuration without its
# service directories (and with dbus-daemon's default limits), so that a
# client finding no Secret Service gets an error at once instead of
# D-Bus-activating a second, locked gnome-keyring-daemon (the unlocked one is
# run and supervised below): test/e2e/dbus-session.conf.

cleanup() {
  # Whatever a failed run left behind: processes whose environment names this session.
  for pid in $(pgrep -f -u "$(id -u)" . 2>/dev/null); do
    if grep -qs "KI_E2E_SESSION=$session" "/proc/$pid/environ" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$session"
  echo "e2e: logs are in $logs" >&2
}
trap cleanup EXIT

rc=0
export KI_E2E_FIRST=1
for v in $versions; do
  if [ "$v" != "$first" ]; then
    peers "$v"
  else
    # The suite compiled before it starts (go test then links it), so
    # that what runs beside it from here (KI_IDLE_SIGNAL) meets no compile.
    go list -tags e2e -export -deps -test ./test/e2e >/dev/null || fail "compiling the suite (go vet -tags e2e ./test/e2e says why)"
    [ -z "${KI_IDLE_SIGNAL:-}" ] || : >"$KI_IDLE_SIGNAL"
  fi
  vlogs="$logs/k8s-$v"
  mkdir -p "$vlogs" "$session/home-$v"
  echo "e2e: Kubernetes $v: kube-apiserver, kubectl and Dex from ${tools[$v]}" >&2
  # The tests run in a private D-Bus session with an unlocked gnome-keyring,
  # under a throwaway HOME: nothing of the machine's user is touched.
  env -i PATH="$PATH" HOME="$session/home-$v" XDG_RUNTIME_DIR="$session/run" TMPDIR="${TMPDIR:-/tmp}" \
    GOPATH="$(go env GOPATH)" GOCACHE="$(go env GOCACHE)" GOMODCACHE="$(go env GOMODCACHE)" GOFLAGS="${GOFLAGS:-}" \
    GOPROXY="$(go env GOPROXY)" GOTOOLCHAIN="$(go env GOTOOLCHAIN)" KI_E2E_TOOLS="${tools[$v]}" KI_E2E_LOGS="$vlogs" KI_E2E_SESSION="$session" \
    E2E_CHROMIUM="$(command -v chromium)" KI_E2E_RUN="${KI_E2E_RUN:-.}" KI_E2E_FIRST="$KI_E2E_FIRST" KI_E2E_WINDOWS="$KI_E2E_FIRST" KI_E2E_K8S="$v" \
    KI_E2E_FIREBASE="$firebase_dir/node_modules/.bin/firebase" KI_E2E_NODE_MODULES="$node_dir/node_modules" KI_IMAGE_DIST="${KI_IMAGE_DIST:-}" KI_E2E_SCALE_NAMESPACES="${KI_E2E_SCALE_NAMESPACES:-}" KI_E2E_UPDATE_IMAGES="${KI_E2E_UPDATE_IMAGES:-}" \
    dbus-run-session --config-file="$PWD/test/e2e/dbus-session.conf" -- bash -c '
      set -euo pipefail
      # gnome-keyring-daemon, unlocked, in the foreground under a
      # supervisor that logs its stderr and restarts it (at most 5 times)
      # if it exits: gnome-keyring 42 has been seen to die of a fatal GLib
      # error (SIGTRAP) in some runs, and its messages are the diagnosis.
      keyring_log="$KI_E2E_LOGS/gnome-keyring.log"
      stop="$XDG_RUNTIME_DIR/keyring-supervisor-stop"
      rm -f "$stop"
      (
        for attempt in 1 2 3 4 5 6; do
          [ -e "$stop" ] && exit 0
          status=0
          printf e2e-keyring | gnome-keyring-daemon --foreground --unlock --components=secrets >/dev/null 2>>"$keyring_log" || status=$?
          echo "gnome-keyring-daemon exited with status $status" >>"$keyring_log"
          [ -e "$stop" ] && exit 0
          [ "$attempt" = 6 ] && { echo "e2e: gnome-keyring-daemon exited with status $status, 6 times: not restarted" >&2; exit 1; }
          echo "e2e: gnome-keyring-daemon exited with status $status; restarted unlocked. The end of $keyring_log:" >&2
          tail -n 5 "$keyring_log" >&2
          sleep 0.2
        done
      ) &
      supervisor=$!
      # At the end: the supervisor told to stop, its daemon terminated
      # (then killed, after 5 s), whatever the moment; nothing here may
      # fail the run (set -e applies in an EXIT trap too).
      stop_keyring() {
        touch "$stop"
        for _ in $(seq 50); do
          pkill -P "$supervisor" 2>/dev/null || true
          kill -0 "$supervisor" 2>/dev/null || break
          sleep 0.1
        done
        pkill -9 -P "$supervisor" 2>/dev/null || true
        kill -9 "$supervisor" 2>/dev/null || true
        wait "$supervisor" 2>/dev/null || true
      }
      trap stop_keyring EXIT
      # The daemon claims the Secret Service on the bus once initialized.
      for _ in $(seq 100); do
        dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
          org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q "boolean true" && break
        sleep 0.1
      done
      # gnome-keyring 42 dies now and then of a GLib error (g_variant_new
      # given a NULL value: SIGTRAP, status 133; seen in CI, in its log),
      # most often under TestCrashSafety'"'"'s kills mid-write (twice in a row
      # in one CI run here). The supervisor restarts it, and the tests that
      # used the keyring at that moment fail with it. So after a run during
      # which it died, the failed tests alone run again, up to twice, as
      # long as it died in the run before; said on stderr; every run is
      # logged, and the last decides. A failure without its death decides
      # at once.
      crashes() { grep -c "^gnome-keyring-daemon exited with status 133" "$keyring_log" || true; }
      run_tests() { # LOG PACKAGE PATTERN [go test flags]
        local log=$1 pkg=$2 pattern=$3 before status=0 failed attempt=1 last
        shift 3
        before=$(crashes)
        go test -count=1 -v "$@" -run "$pattern" "$pkg" 2>&1 | tee "$log" || status=$?
        last=$log
        while [ "$status" != 0 ] && [ "$(crashes)" -gt "$before" ] && [ "$attempt" -le 2 ]; do
          failed=$(grep -oE "^--- FAIL: [A-Za-z0-9_]+" "$last" | awk "{print \$3}" | sort -u | paste -sd "|" - || true)
          [ -n "$failed" ] || break
          echo "e2e: gnome-keyring-daemon died during these tests (see $keyring_log); running the failed ones again ($attempt of 2): $failed" >&2
          before=$(crashes) status=0 last="${log%.log}-rerun$attempt.log"
          go test -count=1 -v "$@" -run "^($failed)\$" "$pkg" 2>&1 | tee "$last" || status=$?
          attempt=$((attempt + 1))
        done
        return "$status"
      }
      # Crash safety of the keyring cache: 200 SIGKILLs during writes to the
      # Secret Service (the disk variant runs with the unit tests); once,
      # with the first version: it does not depend on Kubernetes.
      if [ "${KI_E2E_FIRST:-}" = 1 ] && { [ "${KI_E2E_RUN:-.}" = "." ] || [[ "$KI_E2E_RUN" == *CrashSafety* ]]; }; then
        (export KI_TEST_KEYRING=1; run_tests "$KI_E2E_LOGS/crash-safety.log" ./pkg/token/tokencache "^TestCrashSafety\$")
      fi
      cd test/e2e
      run_tests "$KI_E2E_LOGS/go-test.log" . "${KI_E2E_RUN:-.}" -tags e2e -timeout 25m
    ' || { echo "e2e: the suite failed on Kubernetes $v" >&2; rc=1; }
  export KI_E2E_FIRST=0
done
exit "$rc"
