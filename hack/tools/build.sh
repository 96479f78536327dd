#!/usr/bin/env bash
# Builds the pinned release and lint tools once per version and prints the
# directory holding them. Each group is a module of its own, so that one
# tool's dependencies never move another's (goreleaser's above all):
#   hack/tools         goreleaser, staticcheck, goimports, krew, validate-krew-manifest,
#                      oci-serve (a registry on 127.0.0.1 for the image's
#                      signature in make release-test)
#   hack/tools/vuln    govulncheck, and indexdb (the database it reads, from
#                      golang.org/x/vulndb pinned there)
#   hack/tools/sbom    cyclonedx-gomod, and sbom-archive (one SBOM an archive)
#   hack/tools/cosign  Sigstore's cosign (signatures and provenance)
# "go install mod@version" needs version lists the module proxy here may
# refuse; "go build" in each module does not. Cached in
# ${KI_TOOLS_CACHE:-~/.cache/kubectl-impersonate-tools}, keyed by the
# modules' go.sum, this script and the Go version (about 9 minutes cold on
# 2 cores, most of it goreleaser's and cosign's).
set -euo pipefail
cd "$(dirname "$0")"
# The toolchain the repository pins, whoever calls (make's recipes export
# it, its $(shell) does not): one build, one cache key.
GOTOOLCHAIN=$(sed -n 's/^toolchain //p' ../../go.mod)
export GOTOOLCHAIN
key="$(cat go.sum vuln/go.sum sbom/go.sum cosign/go.sum build.sh | sha256sum | cut -c1-16)-$(go env GOVERSION)"
bin="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/$key"
build() { # build MODULE-DIR PACKAGE...: into $bin
  local dir=$1
  shift
  for pkg in "$@"; do
    echo "tools: building $pkg" >&2
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -o "$bin/" "$pkg")
  done
}
if [[ ! -f $bin/.complete ]]; then
  mkdir -p "$bin"
  start=$SECONDS
  build . github.com/goreleaser/goreleaser/v2 honnef.co/go/tools/cmd/staticcheck golang.org/x/tools/cmd/goimports sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest ./oci-serve
  build vuln golang.org/x/vuln/cmd/govulncheck golang.org/x/vulndb/cmd/indexdb
  build sbom github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod
  echo "tools: building sbom-archive" >&2
  (cd sbom && CGO_ENABLED=0 go build -trimpath -o "$bin/sbom-archive" .)
  build cosign github.com/sigstore/cosign/v2/cmd/cosign
  touch "$bin/.complete"
  echo "tools: built in $((SECONDS - start))s into $bin" >&2
fi
echo "$bin"
