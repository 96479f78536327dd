#!/usr/bin/env bash
# Signs a release built into DIST (make release; make release-test with a
# key of the test's), with Sigstore's cosign (hack/tools/cosign):
#   - DIST/provenance.intoto.json: the SLSA provenance of every artifact
#     (hack/provenance.py), signed: DIST/provenance.sigstore.json
#   - DIST/checksums.txt, which names every archive and SBOM by sha256,
#     signed: DIST/checksums.txt.sigstore.json
#   - the proxy's image, by digest, when IMAGE_REF names it in a registry
#     (REGISTRY/REPOSITORY:TAG@sha256:...; the signature is pushed beside it)
#   - DIST/kubectl-impersonate.pub: the public half of the key
# The key: COSIGN_KEY (a file, with COSIGN_PASSWORD, or a KMS URI); without
# it, keyless (Sigstore's Fulcio and Rekor must be reachable, and an OIDC
# identity: CI's, or a browser). Signatures are recorded in Rekor, Sigstore's
# transparency log, unless COSIGN_TLOG=false (offline: what the tests do,
# since Rekor is out of reach there). IMAGE_INSECURE=true allows a plain-HTTP
# registry (the tests' on 127.0.0.1).
#
#   hack/release-sign.sh DIST
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:?usage: hack/release-sign.sh DIST}
tools=$(hack/tools/build.sh)
cosign="$tools/cosign"
tlog=${COSIGN_TLOG:-true}
key=()
if [[ -n ${COSIGN_KEY:-} ]]; then
  key=(--key "$COSIGN_KEY")
else
  echo "release-sign: no COSIGN_KEY: signing keyless (Sigstore's public infrastructure and an OIDC identity are needed)" >&2
fi

go_version=$(go version "$dist"/kubectl-impersonate_linux_amd64*/kubectl-impersonate | awk '{print $2}')
goreleaser_version=$("$tools/goreleaser" --version 2>/dev/null | awk '/^GitVersion:/ {print $2}')
python3 hack/provenance.py "$dist" "$go_version" "${goreleaser_version:-unknown}"

"$cosign" sign-blob "${key[@]}" --tlog-upload="$tlog" --new-bundle-format --yes \
  --bundle "$dist/checksums.txt.sigstore.json" "$dist/checksums.txt" >/dev/null
echo "release-sign: signed $dist/checksums.txt"
"$cosign" attest-blob "${key[@]}" --tlog-upload="$tlog" --new-bundle-format --yes \
  --statement "$dist/provenance.intoto.json" --bundle "$dist/provenance.sigstore.json" >/dev/null
echo "release-sign: signed $dist/provenance.intoto.json"
if [[ -n ${IMAGE_REF:-} ]]; then
  insecure=()
  [[ ${IMAGE_INSECURE:-} == true ]] && insecure=(--allow-http-registry)
  "$cosign" sign "${key[@]}" --tlog-upload="$tlog" --yes "${insecure[@]}" "$IMAGE_REF" >/dev/null
  echo "release-sign: signed $IMAGE_REF"
fi
if [[ ${#key[@]} -gt 0 ]]; then
  "$cosign" public-key "${key[@]}" > "$dist/kubectl-impersonate.pub"
  echo "release-sign: wrote $dist/kubectl-impersonate.pub"
fi
