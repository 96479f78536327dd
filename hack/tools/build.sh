#!/usr/bin/env bash
# Builds the pinned release and lint tools (hack/tools/go.mod) once per
# version - goreleaser, staticcheck, krew and validate-krew-manifest - and
# prints the directory holding them. "go install mod@version" needs version
# lists the module proxy here may refuse; "go build" in this module does not.
# Cached in ${KI_TOOLS_CACHE:-~/.cache/kubectl-impersonate-tools}, keyed by
# go.sum and the Go version (about 5 minutes cold on 2 cores).
set -euo pipefail
cd "$(dirname "$0")"
key="$(sha256sum go.sum | cut -c1-16)-$(go env GOVERSION)"
bin="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/$key"
if [[ ! -f $bin/.complete ]]; then
  mkdir -p "$bin"
  start=$SECONDS
  for pkg in github.com/goreleaser/goreleaser/v2 honnef.co/go/tools/cmd/staticcheck sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest; do
    echo "tools: building $pkg" >&2
    CGO_ENABLED=0 go build -trimpath -o "$bin/" "$pkg"
  done
  touch "$bin/.complete"
  echo "tools: built in $((SECONDS - start))s into $bin" >&2
fi
echo "$bin"
