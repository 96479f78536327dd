#!/usr/bin/env bash
# Signs a release built into DIST (make release; make release-test with a
# key of the test's), with Sigstore's cosign (hack/tools/cosign):
#   - the SLSA provenance of every artifact (hack/provenance.py), signed
#     into DIST/provenance.sigstore.json: the bundle holds the statement,
#     which is read from there once verified (docs/install.md); no loose
#     copy is published, since nothing would vouch for it
#   - DIST/checksums.txt, which names every archive and SBOM by sha256,
#     signed: DIST/checksums.txt.sigstore.json
#   - the proxy's image, by digest, when IMAGE_REF names it in a registry
#     (REGISTRY/REPOSITORY:TAG@sha256:...; the signature is pushed beside it)
# The key: COSIGN_KEY (a file, with COSIGN_PASSWORD, or a KMS URI), whose
# public half must be kubectl-impersonate.pub as committed at HEAD (the
# tag: users take the key from the repository at the tag, never from the
# release). Without COSIGN_KEY, keyless: only in the release workflow's sign
# job (.github/workflows/release.yaml, on a tag), whose identity is the one
# docs/install.md verifies. Signatures are recorded in Rekor, Sigstore's
# transparency log, unless COSIGN_TLOG=false (offline: what the tests do,
# since Rekor is out of reach there); only then may KI_RELEASE_PUB name
# another public key (the release test's). IMAGE_INSECURE=true allows a
# plain-HTTP registry (the tests' on 127.0.0.1).
#
#   hack/release-sign.sh DIST
#   hack/release-sign.sh --check-key    (make release, before it builds)
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(hack/tools/build.sh cosign goreleaser)
cosign="$tools/cosign"
workflow="kubectl-impersonate/kubectl-impersonate/.github/workflows/release.yaml@refs/tags/"

# committed_pub prints the public key users will verify with: the one
# committed at HEAD, or, for a test signature that no log records,
# KI_RELEASE_PUB.
committed_pub() {
  if [[ -n ${KI_RELEASE_PUB:-} ]]; then
    [[ ${COSIGN_TLOG:-true} == false ]] || { echo "release-sign: KI_RELEASE_PUB is the release test's: a release is signed with the committed key" >&2; return 1; }
    cat "$KI_RELEASE_PUB"
    return
  fi
  git show HEAD:kubectl-impersonate.pub 2>/dev/null || { echo "release-sign: kubectl-impersonate.pub is not committed: commit the release key's public half there (users take it from the repository at the tag)" >&2; return 1; }
}

# check_key: COSIGN_KEY is the key of the committed public key, or keyless
# signing runs in the release workflow.
check_key() {
  if [[ -n ${COSIGN_KEY:-} ]]; then
    local want got
    want=$(committed_pub) || exit 1
    got=$("$cosign" public-key --key "$COSIGN_KEY" 2>/dev/null) || { echo "release-sign: cannot read the public half of COSIGN_KEY (is COSIGN_PASSWORD set?)" >&2; exit 1; }
    if [[ $got != "$want" ]]; then
      echo "release-sign: COSIGN_KEY is not the key of the committed kubectl-impersonate.pub: sign with the project's key, or commit its new public half first (a key rotation)" >&2
      exit 1
    fi
  elif [[ ${GITHUB_WORKFLOW_REF:-} != "$workflow"v* ]]; then
    echo "release-sign: no COSIGN_KEY, and keyless signing is the release workflow's (.github/workflows/release.yaml on a tag: the identity docs/install.md verifies); set COSIGN_KEY to sign with the project's key" >&2
    exit 1
  fi
}

if [[ ${1:-} == --check-key ]]; then
  check_key
  echo "release-sign: the signing key is the project's"
  exit 0
fi
dist=${1:?usage: hack/release-sign.sh DIST | --check-key}
check_key
tlog=${COSIGN_TLOG:-true}
key=()
if [[ -n ${COSIGN_KEY:-} ]]; then
  key=(--key "$COSIGN_KEY")
else
  echo "release-sign: signing keyless as the release workflow ($GITHUB_WORKFLOW_REF)" >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go_version=$(go version "$dist"/kubectl-impersonate_linux_amd64*/kubectl-impersonate | awk '{print $2}')
goreleaser_version=$("$tools/goreleaser" --version 2>/dev/null | awk '/^GitVersion:/ {print $2}')
python3 hack/provenance.py "$dist" "$go_version" "${goreleaser_version:-unknown}" "$tmp/provenance.intoto.json"
rm -f "$dist/provenance.intoto.json" "$dist/kubectl-impersonate.pub"

"$cosign" sign-blob "${key[@]}" --tlog-upload="$tlog" --new-bundle-format --yes \
  --bundle "$dist/checksums.txt.sigstore.json" "$dist/checksums.txt" >/dev/null
echo "release-sign: signed $dist/checksums.txt"
"$cosign" attest-blob "${key[@]}" --tlog-upload="$tlog" --new-bundle-format --yes \
  --statement "$tmp/provenance.intoto.json" --bundle "$dist/provenance.sigstore.json" >/dev/null
echo "release-sign: signed the provenance into $dist/provenance.sigstore.json"
if [[ -n ${IMAGE_REF:-} ]]; then
  insecure=()
  [[ ${IMAGE_INSECURE:-} == true ]] && insecure=(--allow-http-registry)
  "$cosign" sign "${key[@]}" --tlog-upload="$tlog" --yes "${insecure[@]}" "$IMAGE_REF" >/dev/null
  echo "release-sign: signed $IMAGE_REF"
fi
