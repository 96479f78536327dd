#!/usr/bin/env python3
"""Writes an in-toto statement whose predicate
is SLSA provenance v1 (https://slsa.dev/provenance/v1), naming each artifact
of the release by sha256 (the archives, their SBOMs, the checksums file, the
image's SBOM, and the image by its index digest), the commit it was built
from, and the Go and goreleaser versions that built it. Deterministic: its
only date is the commit's. hack/release-sign.sh signs it (cosign
attest-blob); docs/install.md verifies it.

    hack/provenance.py DIST GO-VERSION GORELEASER-VERSION [OUT]

OUT defaults to DIST/provenance.intoto.json; hack/release-sign.sh writes it
elsewhere and publishes only the signed bundle, which holds it.
"""
import hashlib, json, os, subprocess, sys

REPO = "https://github.com/kubectl-impersonate/kubectl-impersonate"

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

def main():
    dist, go, goreleaser = sys.argv[1:4]
    meta = json.load(open(os.path.join(dist, "metadata.json")))
    commit = meta["commit"]
    date = subprocess.check_output(["git", "show", "-s", "--format=%cI", commit], text=True).strip()
    subjects = []
    for a in json.load(open(os.path.join(dist, "artifacts.json"))):
        if a["type"] in ("Archive", "SBOM", "Checksum"):
            subjects.append({"name": a["name"], "digest": {"sha256": sha256(a["path"])}})
    image_sbom = os.path.join(dist, "image.cdx.json")
    if os.path.exists(image_sbom):
        subjects.append({"name": "image.cdx.json", "digest": {"sha256": sha256(image_sbom)}})
    ref_file = os.path.join(dist, "image.ref")
    if os.path.exists(ref_file):
        ref = open(ref_file).read().strip()
        name, digest = ref.split("@")
        subjects.append({"name": name, "digest": {"sha256": digest.removeprefix("sha256:")}})
    subjects.sort(key=lambda s: s["name"])
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subjects,
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": REPO + "/blob/main/docs/install.md#provenance",
                "externalParameters": {"repository": REPO, "commit": commit, "version": meta["version"]},
                "internalParameters": {"go": go, "goreleaser": goreleaser, "gotoolchain": os.environ.get("GOTOOLCHAIN", "")},
                "resolvedDependencies": [{"uri": "git+" + REPO, "digest": {"gitCommit": commit}}],
            },
            "runDetails": {
                "builder": {"id": REPO + "/blob/main/Makefile#release"},
                "metadata": {"invocationId": commit + "/" + meta["version"], "startedOn": date, "finishedOn": date},
            },
        },
    }
    out = sys.argv[4] if len(sys.argv) > 4 else os.path.join(dist, "provenance.intoto.json")
    with open(out, "w") as f:
        json.dump(statement, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"provenance: wrote {out}: {len(subjects)} subjects, commit {commit}")

main()
