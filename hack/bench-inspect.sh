#!/usr/bin/env bash
# Benchmarks an inspection command against kubectl's own: "kubectl-impersonate
# access -n NS" (the full binary: start-up, discovery, the rules review)
# against "kubectl auth can-i --list -n NS" (the pinned kubectl, its
# discovery cache warm), both as a user bound to one Role, on a local
# kube-apiserver + etcd (the end-to-end suite's pinned peers, static tokens,
# 127.0.0.1 only). Prints one Markdown table of hyperfine medians; everything
# it starts, it stops.
#
# Usage: hack/bench-inspect.sh [RUNS]   (default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-100}"
command -v hyperfine >/dev/null || { echo "bench-inspect: install hyperfine (Debian package)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-inspect: install openssl (Debian package)" >&2; exit 1; }
NAME=bench-inspect
TOKENS=$'bench-admin-token,admin,admin-uid,system:masters\nbench-alice-token,alice,alice-uid,dev'
# shellcheck source=hack/lib-apiserver.sh
. hack/lib-apiserver.sh
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" create namespace team-a >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create role dev --verb=get,list,watch --resource=pods,configmaps,deployments.apps >/dev/null
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" -n team-a create rolebinding dev --role=dev --group=dev >/dev/null

export HOME="$work/home"
mkdir -p "$HOME"
can_i="$tools/kubectl --kubeconfig=$work/alice.kubeconfig auth can-i --list -n team-a"
access="$work/kubectl-impersonate access -n team-a --kubeconfig=$work/alice.kubeconfig"
# Both answer (and kubectl's discovery cache is warm) before timing.
$can_i >/dev/null
$access >/dev/null
hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$work/inspect.json" \
  -n "kubectl auth can-i --list -n NS" "$can_i" -n "kubectl impersonate access -n NS" "$access" >/dev/null
python3 - "$work/inspect.json" "$RUNS" <<'PY'
import json, sys
rows = {r["command"]: r["median"] for r in json.load(open(sys.argv[1]))["results"]}
base = rows["kubectl auth can-i --list -n NS"]
print(f"Inspection, {sys.argv[2]} runs each against a local kube-apiserver 1.37 (hyperfine medians; kubectl's discovery cache warm):")
print()
print("| command | median ms | × can-i |")
print("| --- | --- | --- |")
for name, m in rows.items():
    print(f"| {name} | {m * 1000:.2f} | {m / base:.2f} |")
PY
