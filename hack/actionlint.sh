#!/usr/bin/env bash
# Checks the GitHub Actions workflows (.github/workflows) with actionlint,
# pinned in hack/tools/actionlint and built once into the tools cache
# (make lint runs it). Without shellcheck on PATH the run: scripts are
# checked as actionlint checks them without it.
set -euo pipefail
cd "$(dirname "$0")/.."
GOTOOLCHAIN=$(sed -n 's/^toolchain //p' go.mod)
export GOTOOLCHAIN
key="$(cat hack/tools/actionlint/go.sum | sha256sum | cut -c1-16)-$(go env GOVERSION)"
bin="${KI_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-impersonate-tools}/actionlint-$key"
if [[ ! -x $bin/actionlint ]]; then
  echo "actionlint: building it (hack/tools/actionlint)" >&2
  (cd hack/tools/actionlint && CGO_ENABLED=0 go build -trimpath -o "$bin/" github.com/rhysd/actionlint/cmd/actionlint)
fi
"$bin/actionlint" -shellcheck= -pyflakes= "$@"
