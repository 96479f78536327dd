#!/usr/bin/env bash
# The proxy's image's CycloneDX SBOM, beside it: DIST/image.cdx.json, from
# the binaries goreleaser built for linux (each platform's, as the image
# index holds them) and the CA bundle hack/tools/oci-image put in it, its
# subject the image by tag and digest (DIST/image.ref). Deterministic (its
# date is the commit's), so the same commit gives the same document.
#
#   hack/image-sbom.sh DIST [CA-BUNDLE]
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:?usage: hack/image-sbom.sh DIST [CA-BUNDLE]}
ca=${2:-/etc/ssl/certs/ca-certificates.crt}
tools=$(hack/tools/build.sh sbom-archive cyclonedx-gomod)
ref=$(cat "$dist/image.ref")
mapfile -t inputs < <(python3 - "$dist" <<'PY'
import json, sys
dist = sys.argv[1]
for a in json.load(open(f"{dist}/artifacts.json")):
    if a["type"] == "Binary" and a.get("goos") == "linux" and a["name"] in ("kubectl-impersonate", "kubectl-impersonate-apiserver"):
        print(f"linux/{a['goarch']}/{a['name']}={a['path']}")
PY
)
version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$dist/metadata.json")
commit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"])' "$dist/metadata.json")
date=$(git show -s --format=%cI "$commit")
"$tools/sbom-archive" -version "$version" -time "$date" -name "${ref%@*}" -type container -digest "${ref#*@}" \
  "$dist/image.cdx.json" "${inputs[@]}" "etc/ssl/certs/ca-certificates.crt=$ca"
echo "image-sbom: wrote $dist/image.cdx.json for ${ref}"
