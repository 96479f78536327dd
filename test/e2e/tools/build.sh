#!/usr/bin/env bash
# Builds the pinned peers of the end-to-end tests through the Go module proxy
# (wrapper modules with committed go.sum) and caches the binaries by version:
#   kube-apiserver, kubectl  (k8s.io/kubernetes, test/e2e/tools/kube-MINOR)
#   dex                      (github.com/dexidp/dex, test/e2e/tools/dex)
#   etcd                     (go.etcd.io/etcd/server/v3, test/e2e/tools/etcd)
#   helm                     (helm.sh/helm/v3, test/e2e/tools/helm)
#
# Usage: build.sh [MINOR]   (MINOR is a Kubernetes minor such as 1.37; default:
# the newest wrapper module). Prints the directory holding the binaries
# (links into the per-version caches). A warm cache costs nothing; a cold
# kube-apiserver + kubectl build takes 4.5-7 minutes on 2 cores, Dex and
# etcd about 1 each, Helm about 4.
#
#   KI_E2E_PEERS="kube-apiserver kubectl dex etcd"  builds only those (make
#     demo: no Helm); the default is every peer.
#   KI_E2E_USE_INSTALLED=1  takes kube-apiserver and etcd from
#     $KUBEBUILDER_ASSETS (as controller-runtime's setup-envtest installs
#     them) or PATH when they are there at the wanted Kubernetes minor (etcd
#     3.6) instead of building them (make demo; the e2e suite builds its
#     pinned ones). kubectl is always built: /usr/bin/kubectl may be a
#     dispatcher.
#
# Before building, it says what is left and about how long it takes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KI_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-e2e}"

minor="${1:-$(cd "$here" && ls -d kube-1.* | sed 's/^kube-//' | sort -t. -k2 -n | tail -1)}"
kube_dir="$here/kube-$minor"
[ -f "$kube_dir/go.mod" ] || { echo "build.sh: no wrapper module for Kubernetes $minor (have: $(cd "$here" && ls -d kube-1.* | sed 's/^kube-//' | tr '\n' ' '))" >&2; exit 1; }
kube_version="$(grep -Eo 'k8s.io/kubernetes v[0-9.]+' "$kube_dir/go.mod" | head -1 | awk '{print $2}')"
dex_version="$(grep -Eo 'github.com/dexidp/dex v[^ ]+' "$here/dex/go.mod" | head -1 | awk '{print $2}')"
etcd_version="$(grep -Eo 'go.etcd.io/etcd/server/v3 v[^ ]+' "$here/etcd/go.mod" | head -1 | awk '{print $2}')"
helm_version="$(grep -Eo 'helm.sh/helm/v3 v[^ ]+' "$here/helm/go.mod" | head -1 | awk '{print $2}')"
go_version="$(go env GOVERSION)"

peers="${KI_E2E_PEERS:-kube-apiserver kubectl dex etcd helm}"
wanted() { [[ " $peers " == *" $1 "* ]]; }
# Minutes a cold build takes on 2 cores (the measured ones, rounded up).
minutes() { case "$1" in kube-apiserver) echo 5;; kubectl) echo 2;; helm) echo 4;; *) echo 1;; esac; }
step=0 steps=0

# installed NAME: a usable installed kube-apiserver or etcd, or nothing.
installed() {
  [ "${KI_E2E_USE_INSTALLED:-}" = 1 ] || return 0
  local path="" v
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$1" ]; then path="$KUBEBUILDER_ASSETS/$1"
  else path="$(command -v "$1" 2>/dev/null || true)"; fi
  [ -n "$path" ] || return 0
  case "$1" in
    kube-apiserver) v="$("$path" --version 2>/dev/null | grep -Eo 'v1\.[0-9]+' | head -1)"; [ "$v" = "v$minor" ] || return 0;;
    etcd) v="$("$path" --version 2>/dev/null | grep -Eo 'Version: 3\.[0-9]+' | head -1)"; [ "$v" = "Version: 3.6" ] || return 0;;
    *) return 0;;
  esac
  echo "$path"
}

build() { # module-dir package output-dir output what [ldflags]
  local dir="$1" pkg="$2" outdir="$3" out="$4" what="$5" ldflags="-s -w ${6:-}" lock
  if [ -x "$outdir/$out" ]; then return 0; fi
  mkdir -p "$outdir"
  step=$((step + 1))
  # One build of a peer at a time (make demo beside make e2e may be
  # building it): the second waits, then finds it built.
  exec {lock}>"$outdir/$out.lock"
  flock "$lock"
  if [ -x "$outdir/$out" ]; then exec {lock}>&-; return 0; fi
  echo "e2e: building $what from the Go module proxy ($step of $steps, about $(minutes "${out%.exe}") min on 2 cores; once per version)..." >&2
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$outdir/$out.tmp" "$pkg")
  mv "$outdir/$out.tmp" "$outdir/$out"
  exec {lock}>&-
  echo "e2e: built $what in $((SECONDS - start))s" >&2
}

# Stamped with their version, as release binaries are (a module build
# reports v0.0.0-master): /version and kubectl version tell the truth, and
# the proxy's --caller-impersonation-mode=auto reads it.
kube_bin="$cache/kube-$kube_version-stamped-$go_version"
kube_stamp="-X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor#1.} -X k8s.io/component-base/version.gitTreeState=clean"
dex_bin="$cache/dex-$dex_version-$go_version"
etcd_bin="$cache/etcd-$etcd_version-$go_version"
helm_bin="$cache/helm-$helm_version-$go_version"
# What is left to build, and about how long it takes, said first.
declare -A outdirs=([kube-apiserver]="$kube_bin" [kubectl]="$kube_bin" [dex]="$dex_bin" [etcd]="$etcd_bin" [helm]="$helm_bin")
declare -A use=()
left=() total=0
for p in kube-apiserver kubectl dex etcd helm; do
  wanted "$p" || continue
  if [ "$p" = kube-apiserver ] || [ "$p" = etcd ]; then
    found="$(installed "$p")"
    if [ -n "$found" ]; then use[$p]="$found"; echo "e2e: using the installed $p $found" >&2; continue; fi
  fi
  [ -x "${outdirs[$p]}/$p" ] && continue
  left+=("$p"); total=$((total + $(minutes "$p")))
done
if [ "${KI_E2E_WINDOWS:-}" = 1 ] && [ ! -x "$kube_bin-windows-amd64/kubectl.exe" ]; then
  left+=(kubectl.exe); total=$((total + $(minutes kubectl)))
fi
steps=${#left[@]}
if [ "$steps" -gt 0 ]; then
  echo "e2e: $steps to build before anything runs: ${left[*]} (about $total min on 2 cores, the first time only)" >&2
fi

if wanted kube-apiserver && [ -z "${use[kube-apiserver]:-}" ]; then
  build "$kube_dir" k8s.io/kubernetes/cmd/kube-apiserver "$kube_bin" kube-apiserver "kube-apiserver $kube_version" "$kube_stamp"
fi
wanted kubectl && build "$kube_dir" k8s.io/kubernetes/cmd/kubectl "$kube_bin" kubectl "kubectl $kube_version" "$kube_stamp"
# kubectl for Windows (KI_E2E_WINDOWS=1: the Windows job runs it under
# Wine; 72 s cold on 2 cores, docs/testing.md).
if [ "${KI_E2E_WINDOWS:-}" = 1 ]; then
  GOOS=windows GOARCH=amd64 build "$kube_dir" k8s.io/kubernetes/cmd/kubectl "$kube_bin-windows-amd64" kubectl.exe "kubectl $kube_version for windows/amd64" "$kube_stamp"
fi
wanted dex && build "$here/dex" github.com/dexidp/dex/cmd/dex "$dex_bin" dex "Dex $dex_version"
if wanted etcd && [ -z "${use[etcd]:-}" ]; then
  build "$here/etcd" go.etcd.io/etcd/server/v3 "$etcd_bin" etcd "etcd $etcd_version"
fi
if wanted helm; then
  build "$here/helm" helm.sh/helm/v3/cmd/helm "$helm_bin" helm "Helm $helm_version" \
    "-X helm.sh/helm/v3/internal/version.version=$helm_version"
fi

# One directory per set of peers, so that a partial set never stands in
# for a full one.
bin="$cache/bin-kube-$kube_version-dex-$dex_version-$go_version"
[ "$peers" = "kube-apiserver kubectl dex etcd helm" ] || bin="$bin-$(echo "$peers" | tr ' ' '-')"
[ "${#use[@]}" = 0 ] || bin="$bin-installed"
mkdir -p "$bin"
link() { if wanted "$1"; then ln -sfn "${use[$1]:-$2}" "$bin/$1"; fi; }
link kube-apiserver "$kube_bin/kube-apiserver"
link kubectl "$kube_bin/kubectl"
link dex "$dex_bin/dex"
link etcd "$etcd_bin/etcd"
link helm "$helm_bin/helm"
if [ "${KI_E2E_WINDOWS:-}" = 1 ]; then ln -sfn "$kube_bin-windows-amd64/kubectl.exe" "$bin/kubectl.exe"; fi
echo "$kube_version" > "$bin/kube-version"
echo "$bin"
