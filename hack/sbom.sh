#!/usr/bin/env bash
# goreleaser's SBOM step (.goreleaser.yaml, sboms), run in the dist
# directory for each archive: the archive's CycloneDX document, written by
# hack/tools/sbom's sbom-archive (cyclonedx-gomod on each binary).
#
#   hack/sbom.sh ARCHIVE DOCUMENT VERSION COMMIT-DATE
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="$("$here/tools/build.sh" sbom-archive cyclonedx-gomod)"
exec "$tools/sbom-archive" -version "$3" -time "$4" "$2" "$1"
