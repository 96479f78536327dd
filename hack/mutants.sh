#!/usr/bin/env bash
# The named mutants of issue 46 (hack/mutants/*.patch): each is a change
# to the security code that once passed the tests that guard it. Each is
# applied to a copy of the tree and the test its header names must fail
# there; a mutant that lives fails this script.
set -uo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0 n=0
# Control: each named test passes on the tree as it is, so that a failure
# below is the mutant's.
mkdir "$work/control"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work/control"
while read -r pkg run; do
  if ! (cd "$work/control" && go test -count=1 -run "$run" "$pkg" >"$work/log" 2>&1); then
    echo "mutants: control: $pkg -run '$run' fails without a mutant: $(grep -m3 -- '--- FAIL\|Error' "$work/log" | tr '\n' ' ')" >&2
    exit 1
  fi
done < <(for p in hack/mutants/*.patch; do sed -n '2s/^# test: //p' "$p"; done | sort -u)
for p in hack/mutants/*.patch; do
  n=$((n + 1))
  desc=$(sed -n '1s/^# //p' "$p")
  read -r pkg run < <(sed -n '2s/^# test: //p' "$p")
  rm -rf "$work/tree"
  mkdir "$work/tree"
  git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work/tree"
  if ! (cd "$work/tree" && git apply "$OLDPWD/$p"); then
    echo "mutants: $p no longer applies: update it" >&2
    failed=1
    continue
  fi
  if (cd "$work/tree" && go test -count=1 -run "$run" "$pkg" >"$work/log" 2>&1); then
    echo "mutants: LIVED: $desc ($p): $pkg -run '$run' passed" >&2
    failed=1
  elif ! grep -q -- '--- FAIL' "$work/log"; then
    echo "mutants: $p does not build or run: $(grep -m3 . "$work/log" | tr '\n' ' ')" >&2
    failed=1
  else
    echo "mutants: killed: $desc ($pkg -run '$run')"
  fi
done
echo "mutants: $n named mutants run"
exit $failed
