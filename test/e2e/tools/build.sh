#!/usr/bin/env bash
# Builds the pinned peers of the end-to-end tests through the Go module proxy
# (wrapper modules with committed go.sum) and caches the binaries by version:
#   kube-apiserver, kubectl  (k8s.io/kubernetes, test/e2e/tools/kube-MINOR)
#   dex                      (github.com/dexidp/dex, test/e2e/tools/dex)
#   etcd                     (go.etcd.io/etcd/server/v3, test/e2e/tools/etcd)
#   helm                     (helm.sh/helm/v3, test/e2e/tools/helm)
#
# Usage: build.sh [MINOR]   (MINOR is a Kubernetes minor such as 1.37; default:
# the newest wrapper module). Prints the directory holding the three binaries
# (links into the per-version caches). A warm cache costs nothing; a cold
# kube-apiserver + kubectl build takes 4.5-7 minutes on 2 cores, Dex and
# etcd about 1 each.
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

build() { # module-dir package output-dir output what [ldflags]
  local dir="$1" pkg="$2" outdir="$3" out="$4" what="$5" ldflags="-s -w ${6:-}"
  if [ -x "$outdir/$out" ]; then return 0; fi
  mkdir -p "$outdir"
  echo "e2e: building $what from the Go module proxy (once per version; a few minutes on 2 cores)..." >&2
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$outdir/$out.tmp" "$pkg")
  mv "$outdir/$out.tmp" "$outdir/$out"
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
build "$kube_dir" k8s.io/kubernetes/cmd/kube-apiserver "$kube_bin" kube-apiserver "kube-apiserver $kube_version" "$kube_stamp"
build "$kube_dir" k8s.io/kubernetes/cmd/kubectl "$kube_bin" kubectl "kubectl $kube_version" "$kube_stamp"
# kubectl for Windows (KI_E2E_WINDOWS=1: the Windows job runs it under
# Wine; about 7 minutes cold on 2 cores).
if [ "${KI_E2E_WINDOWS:-}" = 1 ]; then
  GOOS=windows GOARCH=amd64 build "$kube_dir" k8s.io/kubernetes/cmd/kubectl "$kube_bin-windows-amd64" kubectl.exe "kubectl $kube_version for windows/amd64" "$kube_stamp"
fi
build "$here/dex" github.com/dexidp/dex/cmd/dex "$dex_bin" dex "Dex $dex_version"
build "$here/etcd" go.etcd.io/etcd/server/v3 "$etcd_bin" etcd "etcd $etcd_version"
build "$here/helm" helm.sh/helm/v3/cmd/helm "$helm_bin" helm "Helm $helm_version" \
  "-X helm.sh/helm/v3/internal/version.version=$helm_version"

bin="$cache/bin-kube-$kube_version-dex-$dex_version-$go_version"
mkdir -p "$bin"
ln -sfn "$kube_bin/kube-apiserver" "$bin/kube-apiserver"
ln -sfn "$kube_bin/kubectl" "$bin/kubectl"
ln -sfn "$dex_bin/dex" "$bin/dex"
ln -sfn "$etcd_bin/etcd" "$bin/etcd"
ln -sfn "$helm_bin/helm" "$bin/helm"
if [ "${KI_E2E_WINDOWS:-}" = 1 ]; then ln -sfn "$kube_bin-windows-amd64/kubectl.exe" "$bin/kubectl.exe"; fi
echo "$kube_version" > "$bin/kube-version"
echo "$bin"
