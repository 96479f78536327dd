#!/usr/bin/env bash
# Builds the pinned peers of the end-to-end tests through the Go module proxy
# (wrapper modules with committed go.sum) and caches the binaries by version:
#   kube-apiserver, kubectl  (k8s.io/kubernetes, test/e2e/tools/kube)
#   dex                      (github.com/dexidp/dex, test/e2e/tools/dex)
# Prints the directory holding them. A warm cache costs nothing; a cold build
# takes about 8-12 minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KI_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-e2e}"

kube_version="$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$here/kube/go.mod" | tail -1)"
kube_version="${kube_version:-$(grep -Eo 'k8s.io/kubernetes v[0-9.]+' "$here/kube/go.mod" | awk '{print $2}')}"
dex_version="$(grep -Eo 'github.com/dexidp/dex v[^ ]+' "$here/dex/go.mod" | head -1 | awk '{print $2}')"
go_version="$(go env GOVERSION)"
bin="$cache/bin-kube-$kube_version-dex-$dex_version-$go_version"
mkdir -p "$bin"

build() { # module-dir package output what
  local dir="$1" pkg="$2" out="$3" what="$4"
  if [ -x "$bin/$out" ]; then return 0; fi
  echo "e2e: building $what from the Go module proxy (once per version; a few minutes on 2 cores)..." >&2
  local start=$SECONDS
  (cd "$here/$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' -o "$bin/$out.tmp" "$pkg")
  mv "$bin/$out.tmp" "$bin/$out"
  echo "e2e: built $what in $((SECONDS - start))s" >&2
}

build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "kube-apiserver $kube_version"
build kube k8s.io/kubernetes/cmd/kubectl kubectl "kubectl $kube_version"
build dex github.com/dexidp/dex/cmd/dex dex "Dex $dex_version"
echo "$bin"
