#!/usr/bin/env bash
# Benchmarks an inspection command against kubectl's own: "kubectl-impersonate
# access -n NS" (the full binary: start-up, discovery, the rules review)
# against "kubectl auth can-i --list -n NS" (the pinned kubectl, its
# discovery cache warm), both as a user bound to one Role, on a local
# kube-apiserver + etcd (the end-to-end suite's pinned peers, static tokens,
# 127.0.0.1 only). Prints one Markdown table of hyperfine medians; everything
# it starts, it stops.
#
# Then the same cluster with NAMESPACES more namespaces (default 1000; a
# RoleBinding in every third for alice's group, a Role and binding in every
# other): access -A about alice as the admin (--as), from the RBAC objects
# (the summary, and -o json) and with one rules review per namespace
# (--rbac-objects=false, -o json), who-can -A
# --by-subject, and kubectl auth can-i --list per namespace (a loop, run
# once), each run after a cold discovery cache, into a second table. The
# request counts are asserted by test/e2e TestAccessAllNamespacesAtScale.
#
# Usage: hack/bench-inspect.sh [RUNS]   (default 100; NAMESPACES=N, SCALE_RUNS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-100}"
NAMESPACES="${NAMESPACES:-1000}"
SCALE_RUNS="${SCALE_RUNS:-5}"
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

# Inspection at scale.
python3 - "$NAMESPACES" > "$work/scale.yaml" <<'PY'
import sys
n = int(sys.argv[1])
docs = ["apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: scale-reader}\nrules:\n- {apiGroups: [\"\"], resources: [configmaps, pods], verbs: [get, list, watch]}\n"]
for i in range(n):
    ns = f"scale-{i:04d}"
    docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
    if i % 3 == 0:
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: reader, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scale-reader}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}}]\n")
    if i % 2 == 0:
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: secrets, namespace: {ns}}}\nrules: [{{apiGroups: [\"\"], resources: [secrets], verbs: [get]}}]\n")
        docs.append(f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: secrets, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: secrets}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: ops}}]\n")
print("---\n".join(docs))
PY
echo "bench-inspect: creating $NAMESPACES namespaces" >&2
"$tools/kubectl" --kubeconfig="$work/admin.kubeconfig" apply --server-side -f "$work/scale.yaml" >/dev/null
admin="--kubeconfig=$work/admin.kubeconfig"
cold="rm -rf $HOME/.kube/cache"
summary="$work/kubectl-impersonate access -A $admin --as=alice --as-group=dev"
local_a="$summary -o json"
per_ns="$local_a --rbac-objects=false"
who_can="$work/kubectl-impersonate who-can get configmaps -A --by-subject $admin"
can_i_loop="bash -c 'for ns in \$($tools/kubectl $admin get ns -o name | cut -d/ -f2); do $tools/kubectl $admin auth can-i --list -n \$ns --as=alice --as-group=dev >/dev/null; done'"
hyperfine --style none --runs "$SCALE_RUNS" --prepare "$cold" --export-json "$work/scale.json" \
  -n "access -A (RBAC objects, the summary)" "$summary" -n "access -A -o json (RBAC objects)" "$local_a" \
  -n "access -A -o json (one rules review per namespace)" "$per_ns" \
  -n "who-can -A --by-subject" "$who_can" >/dev/null
hyperfine --style none --runs 1 --export-json "$work/can-i.json" -n "kubectl auth can-i --list, per namespace" "$can_i_loop" >/dev/null
python3 - "$work/scale.json" "$work/can-i.json" "$NAMESPACES" <<'PY'
import json, sys
rows = []
for f in sys.argv[1:3]:
    rows += json.load(open(f))["results"]
base = next(r["median"] for r in rows if "one rules review" in r["command"])
print()
print(f"With {sys.argv[3]} more namespaces, access -A about another identity (--as) as an admin, each run after a cold discovery cache (hyperfine medians):")
print()
print("| command | median ms | × rules reviews |")
print("| --- | --- | --- |")
for r in rows:
    print(f"| {r['command']} | {r['median'] * 1000:.0f} | {r['median'] / base:.2f} |")
PY
