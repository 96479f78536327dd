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
# 2 cores, most of it goreleaser's and cosign's). build.sh TOOL... builds
# those alone, and every tool is built when first wanted.
set -euo pipefail
cd "$(dirname "$0")"
# The toolchain the repository pins, whoever calls (make's recipes export
# it, its $(shell) does not): one build, one cache key.
GOTOOLCHAIN=$(sed -n 's/^toolchain //p' ../../go.mod)
export GOTOOLCHAIN
key="$(cat go.sum vuln/go.sum sbom/go.sum cosign/go.sum build.sh | sha256sum | cut -c1-16)-$(go env GOVERSION)"
bin="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/$key"
# tool NAME: its module and package.
declare -A module=([goreleaser]=. [staticcheck]=. [goimports]=. [krew]=. [validate-krew-manifest]=. [oci-serve]=.
  [govulncheck]=vuln [indexdb]=vuln [cyclonedx-gomod]=sbom [sbom-archive]=sbom [cosign]=cosign)
declare -A package=([goreleaser]=github.com/goreleaser/goreleaser/v2 [staticcheck]=honnef.co/go/tools/cmd/staticcheck
  [goimports]=golang.org/x/tools/cmd/goimports [krew]=sigs.k8s.io/krew/cmd/krew
  [validate-krew-manifest]=sigs.k8s.io/krew/cmd/validate-krew-manifest [oci-serve]=./oci-serve
  [govulncheck]=golang.org/x/vuln/cmd/govulncheck [indexdb]=golang.org/x/vulndb/cmd/indexdb
  [cyclonedx-gomod]=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod [sbom-archive]=. 
  [cosign]=github.com/sigstore/cosign/v2/cmd/cosign)
# Minutes each takes cold on 2 cores (goreleaser and cosign most of the 9).
declare -A minutes=([goreleaser]=3 [cosign]=3 [krew]=1 [staticcheck]=1 [govulncheck]=1 [cyclonedx-gomod]=1)
all=(goreleaser staticcheck goimports krew validate-krew-manifest oci-serve govulncheck indexdb cyclonedx-gomod
  sbom-archive cosign)
# build.sh [TOOL...]: those tools only (make lint needs four of eleven);
# none named, all of them.
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=("${all[@]}")
left=() total=0
for t in "${wanted[@]}"; do
  [[ -n ${module[$t]:-} ]] || { echo "tools: no tool $t (have: ${all[*]})" >&2; exit 2; }
  [[ -x $bin/$t ]] && continue
  left+=("$t"); total=$((total + ${minutes[$t]:-0}))
done
if [[ ${#left[@]} -gt 0 ]]; then
  mkdir -p "$bin"
  echo "tools: ${#left[@]} to build: ${left[*]} (about $((total > 0 ? total : 1)) min on 2 cores, once)" >&2
  start=$SECONDS n=0
  for t in "${left[@]}"; do
    n=$((n + 1))
    echo "tools: building $t ($n of ${#left[@]})" >&2
    # One build of a tool at a time (make lint beside make release-test may be
    # building it): the second waits, then finds it built.
    exec {lock}>"$bin/$t.lock"
    flock "$lock"
    if [[ ! -x $bin/$t ]]; then
      (cd "${module[$t]}" && CGO_ENABLED=0 go build -trimpath -o "$bin/$t.tmp" "${package[$t]}") \
        || { echo "tools: building $t failed" >&2; exit 1; }
      mv "$bin/$t.tmp" "$bin/$t"
    fi
    exec {lock}>&-
  done
  echo "tools: built in $((SECONDS - start))s into $bin" >&2
fi
echo "$bin"
